// `serve` with its index persisted in DATA_DIR/index.bin, as real processes on a real data directory: a restart
// on an unchanged database reads the file (its log line says "index: loaded") and answers exactly as before; a
// database changed behind the file's back (another process's import, a restored backup, a damaged, truncated or
// deleted file, a log pruned past it, another database's file, other risk thresholds) is replayed or rebuilt,
// and its answers are always those of an index rebuilt from the table.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const root = mkdtempSync(join(tmpdir(), "abuse-intel-index-file-"));
const dataDir = join(root, "data");
const indexFile = join(dataDir, "index.bin");
const env = { ...process.env, ABUSE_INTEL_DATA_DIR: "", ABUSE_INTEL_ADMIN_PASSWORD: "index-file-test-password" };
let apiKey = "";

/** Reported, reported later, listed by a feed (a network, an address in it, an address alone), never seen. */
const ADDRESSES = ["45.33.1.1", "45.33.1.2", "45.33.1.3", "2600:3c00::1", "2600:3c00::2", "23.94.0.5", "23.95.0.7", "45.33.9.9"];

async function run(args: string[], dir = dataDir): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir], { stdout: "pipe", stderr: "pipe", env });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}: ${stderr}`);
  return { code, stdout, stderr };
}

let csvCount = 0;
async function importReports(rows: [string, number][], dir = dataDir): Promise<void> {
  const file = join(root, `reports-${++csvCount}.csv`);
  const when = new Date(Date.now() - 86_400_000).toISOString();
  writeFileSync(file, `IP,Categories,ReportDate,Comment\n${rows.map(([ip, category]) => `${ip},${category},${when},test`).join("\n")}\n`);
  await run(["import", "reports", file, "--reporter", "r@example.test"], dir);
}

interface Server {
  proc: ReturnType<typeof Bun.spawn>;
  port: number;
  /** stdout up to "listening on": the index line is in it. */
  log: string;
}

async function start(extra: string[] = [], dir = dataDir): Promise<Server> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dir, ...extra], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env });
  const reader = proc.stdout.getReader();
  let log = "";
  const deadline = Date.now() + 60_000;
  while (!/listening on http:\/\/[^:]+:\d+/.test(log)) {
    if (Date.now() > deadline) throw new Error(`the server did not start:\n${log}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`the server exited:\n${log}${await new Response(proc.stderr).text()}`);
    log += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const port = Number(/listening on http:\/\/[^:]+:(\d+)/.exec(log)![1]);
  return { proc, port, log };
}

async function stop(server: Server, signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
  server.proc.kill(signal);
  await server.proc.exited;
}

async function answersOf(server: Server): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const ip of ADDRESSES) {
    const response = await fetch(`http://127.0.0.1:${server.port}/v1/ip/${ip}/reputation`, { headers: { "x-api-key": apiKey } });
    expect(response.status).toBe(200);
    out[ip] = ((await response.json()) as { data: unknown }).data;
  }
  return out;
}

/** Starts, takes the answers and the index log line, stops (which writes the file). */
async function serveOnce(extra: string[] = [], dir = dataDir): Promise<{ answers: Record<string, unknown>; line: string }> {
  const server = await start(extra, dir);
  try {
    const line = server.log.split("\n").find((l) => l.startsWith("index: ")) ?? "";
    return { answers: dir === dataDir ? await answersOf(server) : {}, line };
  } finally {
    await stop(server);
  }
}

/** What an index rebuilt from the table answers now (the file is deleted first; the rebuilt one is written at the stop). */
async function rebuiltAnswers(extra: string[] = []): Promise<Record<string, unknown>> {
  rmSync(indexFile, { force: true });
  const { answers, line } = await serveOnce(extra);
  expect(line).toContain("index: rebuilt from the addresses table");
  return answers;
}

beforeAll(async () => {
  await run(["user", "add", "--email", "r@example.test", "--tier", "free"]);
  apiKey = (await run(["key", "create", "--email", "r@example.test", "--name", "test"])).stdout.match(/aik_\S+/)![0];
  await importReports([
    ["45.33.1.1", 18],
    ["45.33.1.3", 22],
    ["2600:3c00::1", 14],
  ]);
  const feed = join(root, "feed.txt");
  writeFileSync(feed, "23.94.0.0/24\n23.95.0.7\n");
  await run(["feed", "add", "listed", "--file", feed, "--category", "SPAM"]);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("serve with DATA_DIR/index.bin", () => {
  let first: Record<string, unknown>;

  test("the first start rebuilds and says so; stopping writes the file; the next start loads it and answers the same", async () => {
    const built = await serveOnce();
    expect(built.line).toContain("index: rebuilt from the addresses table (");
    expect(built.line).toContain("there is no index.bin yet");
    expect(statSync(indexFile).size).toBeGreaterThan(0);
    first = built.answers;
    expect((first["45.33.1.1"] as { totalReports: number }).totalReports).toBe(1);
    expect((first["23.94.0.5"] as { totalReports: number } | null) ?? null).not.toBeNull();

    const loaded = await serveOnce();
    expect(loaded.line).toStartWith(`index: loaded from ${indexFile} (`);
    expect(loaded.line).toContain("0 changed since");
    expect(loaded.answers).toEqual(first);
  }, 60_000);

  test("another process's import while the server is stopped is replayed from the change log", async () => {
    await importReports([
      ["45.33.1.2", 18],
      ["45.33.1.1", 4],
      ["2600:3c00::2", 18],
    ]);
    const loaded = await serveOnce();
    expect(loaded.line).toStartWith("index: loaded from ");
    expect(loaded.line).toContain("3 changed since");
    expect(loaded.answers).not.toEqual(first);
    expect((loaded.answers["45.33.1.1"] as { totalReports: number }).totalReports).toBe(2);
    expect(loaded.answers).toEqual(await rebuiltAnswers());
  }, 60_000);

  test("a server killed after following another process's import replays it at the next start", async () => {
    const server = await start();
    await importReports([["45.33.1.3", 4]]);
    // The running server notices the commit within a second or two.
    const deadline = Date.now() + 60_000;
    while (((await answersOf(server))["45.33.1.3"] as { totalReports: number }).totalReports !== 2) {
      if (Date.now() > deadline) throw new Error("the server never saw the import");
      await Bun.sleep(200);
    }
    await stop(server, "SIGKILL");
    const loaded = await serveOnce();
    expect(loaded.line).toStartWith("index: loaded from ");
    expect(loaded.line).toContain("1 changed since");
    expect((loaded.answers["45.33.1.3"] as { totalReports: number }).totalReports).toBe(2);
    expect(loaded.answers).toEqual(await rebuiltAnswers());
  }, 60_000);

  test("a restored backup (older, then written to past the file's position) rebuilds", async () => {
    const backup = join(root, "before.backup");
    await run(["backup", "--out", backup]);
    const before = await rebuiltAnswers();
    await importReports([
      ["45.33.1.2", 4],
      ["45.33.1.3", 18],
    ]);
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
    await run(["restore", backup]);
    // The restored database moves past where the file was written, with other changes.
    await importReports([
      ["45.33.1.1", 22],
      ["45.33.9.9", 18],
      ["2600:3c00::1", 4],
      ["45.33.1.2", 22],
    ]);
    const restored = await serveOnce();
    expect(restored.line).toContain("index: rebuilt from the addresses table");
    expect(restored.line).toContain("not of this database");
    expect(restored.answers).not.toEqual(before);
    expect(restored.answers).toEqual(await rebuiltAnswers());
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
  }, 90_000);

  test.each([
    ["truncated", (bytes: Buffer) => bytes.subarray(0, Math.floor(bytes.byteLength / 2)), "truncated"],
    ["damaged in a tree", (bytes: Buffer) => flip(bytes, Math.floor(bytes.byteLength / 2)), "damaged"],
    ["damaged in its header", (bytes: Buffer) => flip(bytes, 40), "damaged"],
    ["not an index file", () => Buffer.from("hello"), "truncated"],
  ])("a file %s is not used: rebuilt, same answers", async (_name, spoil, reason) => {
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
    const expected = await rebuiltAnswers();
    writeFileSync(indexFile, spoil(readFileSync(indexFile)));
    const { line, answers } = await serveOnce();
    expect(line).toContain("index: rebuilt from the addresses table");
    expect(line).toContain(reason);
    expect(answers).toEqual(expected);
  }, 60_000);

  test("a deleted file rebuilds", async () => {
    rmSync(indexFile);
    const { line } = await serveOnce();
    expect(line).toContain("there is no index.bin yet");
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
  }, 60_000);

  test("changes no longer in the change log rebuild", async () => {
    await importReports([["45.33.1.2", 14]]);
    const sqlite = new Database(join(dataDir, "abuse-intel.db"));
    sqlite.exec("DELETE FROM address_change_log");
    sqlite.close();
    const { line, answers } = await serveOnce();
    expect(line).toContain("no longer in the change log");
    expect(answers).toEqual(await rebuiltAnswers());
  }, 60_000);

  test("more logged changes than replaying is worth rebuilds", async () => {
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
    const sqlite = new Database(join(dataDir, "abuse-intel.db"));
    const touch = sqlite.prepare("UPDATE addresses SET total_reports = total_reports + ? WHERE ip = ?");
    sqlite.transaction(() => {
      for (let i = 0; i < 10_050; i++) touch.run(i === 10_049 ? 1 : 0, "45.33.1.1");
    })();
    sqlite.close();
    const { line, answers } = await serveOnce();
    expect(line).toContain("10050 changes since index.bin was written: rebuilding is quicker");
    expect(answers).toEqual(await rebuiltAnswers());
  }, 60_000);

  test("another database's file rebuilds", async () => {
    const other = join(root, "other");
    await run(["user", "add", "--email", "r@example.test", "--tier", "free"], other);
    await importReports([["45.33.1.1", 18]], other);
    await serveOnce([], other);
    copyFileSync(join(other, "index.bin"), indexFile);
    const { line, answers } = await serveOnce();
    expect(line).toContain("not of this database");
    expect(answers).toEqual(await rebuiltAnswers());
  }, 60_000);

  test("a feed removed while the server is stopped: its listings are gone after a load (the file holds rows only)", async () => {
    const listedBefore = (await serveOnce()).answers;
    expect(listedBefore["23.94.0.5"]).not.toBeNull();
    expect(listedBefore["23.95.0.7"]).not.toBeNull();
    await run(["feed", "remove", "listed"]);
    const { line, answers } = await serveOnce();
    expect(line).toStartWith("index: loaded from ");
    expect(answers["23.94.0.5"]).not.toEqual(listedBefore["23.94.0.5"]);
    expect(answers["23.95.0.7"]).not.toEqual(listedBefore["23.95.0.7"]);
    expect(answers).toEqual(await rebuiltAnswers());
    const feed = join(root, "feed.txt");
    await run(["feed", "add", "listed", "--file", feed, "--category", "SPAM"]);
    expect((await serveOnce()).answers).toEqual(listedBefore);
  }, 60_000);

  test("other risk thresholds rebuild (the file's risk column is theirs)", async () => {
    const scoring = ["--scoring", JSON.stringify({ riskThresholds: { low: 90, medium: 60, high: 30 } })];
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
    const { line, answers } = await serveOnce(scoring);
    expect(line).toContain("other risk thresholds");
    expect(answers).toEqual(await rebuiltAnswers(scoring));
  }, 60_000);

  test("a migration applied since the file was written rebuilds (it may renumber the change log)", async () => {
    await serveOnce();
    expect((await serveOnce()).line).toStartWith("index: loaded from ");
    const sqlite = new Database(join(dataDir, "abuse-intel.db"));
    const last = sqlite.query("SELECT rowid AS id, hash FROM __drizzle_migrations ORDER BY created_at DESC, rowid DESC LIMIT 1").get() as { id: number; hash: string };
    // What a newer build's migration leaves: another last migration (drizzle applies by time, not by hash).
    sqlite.query("UPDATE __drizzle_migrations SET hash = ? WHERE rowid = ?").run(`${last.hash}-next`, last.id);
    sqlite.close();
    try {
      const { line, answers } = await serveOnce();
      expect(line).toContain("the database's schema changed since index.bin was written");
      expect(answers).toEqual(await rebuiltAnswers());
      expect((await serveOnce()).line).toStartWith("index: loaded from ");
    } finally {
      const restore = new Database(join(dataDir, "abuse-intel.db"));
      restore.query("UPDATE __drizzle_migrations SET hash = ? WHERE rowid = ?").run(last.hash, last.id);
      restore.close();
    }
  }, 60_000);
});

function flip(bytes: Buffer, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] ^= 0xff;
  return copy;
}
