// A feed refresh in steps killed midway (issue 29), on the built executable: the server makes a scheduled feed's
// refresh a chunk per transaction, so a SIGKILL between two leaves part of the new list. After the restart the
// feed's status says a change was under way and what it left is consistent (the listings are the store's); the
// next refresh downloads whole (no validators were kept) and completes it.

import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseFirstStartCredentials } from "./support/binary";
import { bodyOf, type RunningServer, sandboxEachTest } from "./support/server";

const { sandbox, start } = sandboxEachTest();

const LINES = 200_000;
const list = (prefix: number) =>
  `${Array.from({ length: LINES }, (_, i) => `${prefix}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`).join("\n")}\n`;

test("a refresh killed between its steps: the status says so, the store and listings agree, the next refresh completes it", async () => {
  let server = await start();
  const creds = parseFirstStartCredentials(server.output());
  if (!creds) throw new Error(`no admin credentials printed:\n${server.output()}`);
  const login = async (s: RunningServer) => (await bodyOf(await s.request("POST", "/v1/auth/login", { json: { email: creds.email, password: creds.password } }))).data.accessToken as string;
  let headers = { authorization: `Bearer ${await login(server)}` };
  const file = join(sandbox().dir, "list.txt");
  writeFileSync(file, list(10));
  const added = await server.request("POST", "/v1/admin/feeds", { headers, json: { name: "big", file, category: "SPAM", schedule: "0 0 1 1 *" } });
  expect((await bodyOf(added)).data.refresh).toMatchObject({ result: "updated", entries: LINES });

  // A new list: the refresh moves every entry, a chunk a step. The feed's status is read between its steps.
  writeFileSync(file, list(11));
  const refresh = server.request("POST", "/v1/admin/feeds/big/refresh", { headers }).catch(() => null);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const feed = (await bodyOf(await server.request("GET", "/v1/admin/feeds/big", { headers }))).data;
    if (typeof feed.lastError === "string" && feed.lastError.includes("under way")) break;
    if (Date.now() > deadline) throw new Error("the refresh never showed as under way");
    await Bun.sleep(5);
  }
  // Some steps in: a few more polls, each answered between two steps.
  for (let i = 0; i < 3; i++) await server.request("GET", "/readyz");
  await server.stop("SIGKILL");
  await refresh;

  const counts = () => {
    const db = new Database(join(sandbox().dataDir, "abuse-intel.db"), { readonly: true });
    try {
      const row = (prefix: number) => (db.query("SELECT count(*) AS n FROM feed_entries WHERE feed_name = 'big' AND cidr LIKE ?").get(`${prefix}.%`) as { n: number }).n;
      return { old: row(10), new: row(11) };
    } finally {
      db.close();
    }
  };
  const left = counts();
  // Part of the change was committed, not all of it.
  expect(left.old + left.new).toBeGreaterThan(0);
  expect(left.new).toBeLessThan(LINES);

  server = await start();
  headers = { authorization: `Bearer ${await login(server)}` };
  const feed = (await bodyOf(await server.request("GET", "/v1/admin/feeds/big", { headers }))).data;
  expect(feed.lastError).toContain("under way");
  // The listings are what the store holds: an address with its row is listed, one without is not.
  const db = new Database(join(sandbox().dataDir, "abuse-intel.db"), { readonly: true });
  const stored = db.query("SELECT 1 FROM feed_entries WHERE feed_name = 'big' AND cidr = ?");
  const samples = [10, 11].flatMap((prefix) => Array.from({ length: 40 }, (_, i) => `${prefix}.${(i * 4999) >>> 16}.${((i * 4999) >>> 8) & 255}.${(i * 4999) & 255}`));
  const expected = samples.map((ip) => stored.get(`${ip}/32`) !== null);
  db.close();
  expect(expected).toContain(true);
  for (const [i, ip] of samples.entries()) {
    const networks = (await bodyOf(await server.request("GET", `/v1/ip/${ip}`, { headers }))).networks as unknown[];
    expect([ip, networks.length]).toEqual([ip, expected[i] ? 1 : 0]);
  }

  const again = await server.request("POST", "/v1/admin/feeds/big/refresh", { headers }).catch((error) => {
    throw new Error(`${error}\n${server.output().slice(-3000)}`);
  });
  expect((await bodyOf(again)).data).toMatchObject({ result: "updated", entries: LINES });
  expect(counts()).toEqual({ old: 0, new: LINES });
  const done = (await bodyOf(await server.request("GET", "/v1/admin/feeds/big", { headers }))).data;
  expect(done).toMatchObject({ entries: LINES, lastError: null });
  // The refresh may outlast the listener's idle timeout: its request lifted it, so it was answered.
  expect(server.output()).not.toContain("timed out a request");
}, 300_000);
