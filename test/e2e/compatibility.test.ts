// The two compatibility APIs on the built executable (contracts 13 and 14): an AbuseIPDB-style report and check,
// and a bouncer's cursor that survives SIGKILL between pulls (it was committed when the answer went out whole).

import { expect, test } from "bun:test";
import { parseFirstStartCredentials, runCli } from "./support/binary";
import { bodyOf, type RunningServer, sandboxEachTest } from "./support/server";

const { sandbox, start } = sandboxEachTest();

async function adminLogin(server: RunningServer): Promise<{ token: string; email: string }> {
  const creds = parseFirstStartCredentials(server.output());
  if (!creds) throw new Error(`no first-start credentials:\n${server.output()}`);
  const res = await server.request("POST", "/v1/auth/login", { json: { email: creds.email, password: creds.password } });
  expect(res.status).toBe(200);
  return { token: (await bodyOf(res)).data.accessToken, email: creds.email };
}

test("/api/v2: a report with two categories, then check and the 15-minute rule", async () => {
  const server = await start();
  const { token } = await adminLogin(server);
  const keyRes = await server.request("POST", "/v1/keys", { headers: { authorization: `Bearer ${token}` }, json: { name: "fail2ban" } });
  const key = (await bodyOf(keyRes)).data.key;
  const form = new URLSearchParams({ ip: "203.0.113.77", categories: "18,22", comment: "sshd" });
  const report = await server.request("POST", "/api/v2/report", { headers: { Key: key, "content-type": "application/x-www-form-urlencoded" }, body: form.toString() });
  expect(report.status).toBe(200);
  expect((await bodyOf(report)).data.ipAddress).toBe("203.0.113.77");
  const check = await server.request("GET", "/api/v2/check?ipAddress=203.0.113.77&verbose", { headers: { Key: key } });
  const data = (await bodyOf(check)).data;
  expect(data).toMatchObject({ totalReports: 2, numDistinctUsers: 1 });
  expect(data.reports.map((r: { categories: number[] }) => r.categories[0]).sort()).toEqual([18, 22]);
  const again = await server.request("POST", "/api/v2/report", { headers: { Key: key, "content-type": "application/x-www-form-urlencoded" }, body: form.toString() });
  expect(again.status).toBe(429);
  expect(again.headers.get("x-ratelimit-limit")).not.toBeNull();
}, 60_000);

test("a bouncer's cursor survives SIGKILL between pulls; the bouncer key from the CLI works at once", async () => {
  let server = await start();
  const { token } = await adminLogin(server);
  const added = await runCli(sandbox(), ["bouncer", "add", "edge", "--mode", "ipset"]);
  expect(added.code).toBe(0);
  const key = /api_key: (\S+)/.exec(added.stdout)![1];
  // Three reporters at severity 5 make the address CRITICAL: listed for a HIGH bouncer.
  for (let i = 0; i < 3; i++) {
    const email = `r${i}@example.test`;
    expect((await server.request("POST", "/v1/admin/users", { headers: { authorization: `Bearer ${token}` }, json: { email, password: "a long enough password", tier: "free" } })).status).toBe(201);
    const login = await bodyOf(await server.request("POST", "/v1/auth/login", { json: { email, password: "a long enough password" } }));
    const res = await server.request("POST", "/v1/ip/report", { headers: { authorization: `Bearer ${login.data.accessToken}` }, json: { ip: "198.51.100.99", category: "ssh", severity: 5 } });
    expect(res.status).toBe(201);
  }
  const pull = async (query = "") => bodyOf(await server.request("GET", `/v1/decisions/stream?${query}`, { headers: { "X-Api-Key": key } }));
  const first = await pull("startup=true");
  expect(first.new.map((d: { value: string }) => d.value)).toEqual(["198.51.100.99"]);
  expect(await server.stop("SIGKILL")).toBeNull();
  server = await start();
  expect(await pull()).toEqual({ new: [], deleted: [] });
  const list = await runCli(sandbox(), ["bouncer", "list", "--json"]);
  expect(JSON.parse(list.stdout)[0]).toMatchObject({ name: "edge", lastPullFrom: "127.0.0.1" });
}, 60_000);
