// Review (intake): `serve` stopping (SIGTERM) while reports are queued and another process holds the write lock,
// and SIGKILL right after a 201. A report is either acknowledged (201) and in the database, or refused with an
// error and not stored; never acknowledged and lost.

import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { login, startServe, stop, type ServeProcess } from "./intake-support";

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "abuse-intel-review-intake-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Outcome = { ip: string; status: number | null; body: string; error: string | null };

async function send(url: string, token: string, ip: string): Promise<Outcome> {
  try {
    const res = await fetch(`${url}/v1/ip/report`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ip, category: "SSH", severity: 3 }),
    });
    return { ip, status: res.status, body: await res.text(), error: null };
  } catch (error) {
    return { ip, status: null, body: "", error: String(error) };
  }
}

test("SIGTERM while reports wait for another process's write lock: each is answered, 201 only if stored", async () => {
  const dir = tempDir();
  let server: ServeProcess | null = null;
  let other: Database | null = null;
  try {
    server = await startServe(dir);
    const token = await login(server.url);
    other = new Database(join(dir, "abuse-intel.db"));
    other.exec("PRAGMA busy_timeout = 5000");
    other.exec("BEGIN IMMEDIATE");
    const ips = Array.from({ length: 5 }, (_, i) => `203.0.113.${i + 10}`);
    const pending = ips.map((ip) => send(server!.url, token, ip));
    await Bun.sleep(600); // the reports are queued, waiting for the lock
    server.proc.kill("SIGTERM");
    await Bun.sleep(1_500);
    other.exec("COMMIT");
    other.close();
    other = null;
    const outcomes = await Promise.all(pending);
    const code = await Promise.race([server.proc.exited, Bun.sleep(10_000).then(() => "hung")]);
    const db = new Database(join(dir, "abuse-intel.db"), { readonly: true });
    const stored = new Set((db.query("SELECT ip FROM reports").all() as { ip: string }[]).map((r) => r.ip));
    db.close();
    for (const o of outcomes) {
      if (o.status === 201) expect({ ip: o.ip, stored: stored.has(o.ip) }).toEqual({ ip: o.ip, stored: true });
      else expect({ ip: o.ip, stored: stored.has(o.ip) }).toEqual({ ip: o.ip, stored: false });
    }
    // Every client hears an answer (a 503 it can retry, or a 201), not a dropped connection.
    expect(outcomes.map((o) => (o.status === null ? `no answer: ${o.error}` : o.status === 201 || o.status === 503 ? "answered" : `${o.status} ${o.body}`))).toEqual(ips.map(() => "answered"));
    expect(code).toBe(0);
  } finally {
    other?.close();
    await stop(server);
  }
}, 20_000);

test("SIGKILL right after a 201: the report is in the database and in the lookup after restart", async () => {
  const dir = tempDir();
  let server: ServeProcess | null = null;
  try {
    server = await startServe(dir);
    let token = await login(server.url);
    // A clean stop first, so an index file exists, then a report and a SIGKILL.
    await stop(server, "SIGTERM");
    server = await startServe(dir);
    token = await login(server.url);
    const o = await send(server.url, token, "198.51.100.77");
    expect(o.status).toBe(201);
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    const db = new Database(join(dir, "abuse-intel.db"), { readonly: true });
    expect(db.query("SELECT count(*) AS n FROM reports WHERE ip = '198.51.100.77'").get()).toEqual({ n: 1 });
    db.close();
    server = await startServe(dir);
    const token2 = await login(server.url);
    const res = await fetch(`${server.url}/v1/ip/198.51.100.77`, { headers: { authorization: `Bearer ${token2}` } });
    const body = (await res.json()) as { reports: number };
    expect(body.reports).toBe(1);
  } finally {
    await stop(server);
  }
}, 20_000);

test("SIGTERM in the middle of a stream of reports: every 201 is stored, nothing unacknowledged answered 201", async () => {
  const dir = tempDir();
  let server: ServeProcess | null = null;
  try {
    server = await startServe(dir);
    const token = await login(server.url);
    const outcomes: Promise<Outcome>[] = [];
    let n = 0;
    const fire = setInterval(() => {
      for (let i = 0; i < 20; i++) {
        n++;
        outcomes.push(send(server!.url, token, `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`));
      }
    }, 2);
    await Bun.sleep(400);
    server.proc.kill("SIGTERM");
    await Bun.sleep(300);
    clearInterval(fire);
    const all = await Promise.all(outcomes);
    const code = await Promise.race([server.proc.exited, Bun.sleep(10_000).then(() => "hung")]);
    const db = new Database(join(dir, "abuse-intel.db"), { readonly: true });
    const stored = new Set((db.query("SELECT ip FROM reports").all() as { ip: string }[]).map((r) => r.ip));
    db.close();
    const acknowledgedLost = all.filter((o) => o.status === 201 && !stored.has(o.ip)).map((o) => o.ip);
    const refusedStored = all.filter((o) => o.status !== 201 && stored.has(o.ip)).map((o) => `${o.ip} ${o.status} ${o.error ?? o.body}`);
    const statuses: Record<string, number> = {};
    for (const o of all) statuses[String(o.status ?? o.error)] = (statuses[String(o.status ?? o.error)] ?? 0) + 1;
    console.log(statuses, stored.size);
    expect(acknowledgedLost).toEqual([]);
    expect(refusedStored.slice(0, 5)).toEqual([]);
    expect(code).toBe(0);
  } finally {
    await stop(server);
  }
}, 20_000);
