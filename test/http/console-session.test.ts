// The console's session over HTTP, without a browser (contract 15): signing in takes the email as the API does;
// the session's token is for the console only, and the API's tokens are not sessions; signing out ends the
// session for good: under any spelling of its token, and after a restart.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, TEST_PASSWORD } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  await addUser(h, { email: "root@example.com", role: "admin", tier: "enterprise" });
});
afterAll(() => h.close());

const FORM = "application/x-www-form-urlencoded";
async function signIn(email: string): Promise<{ status: number; token: string }> {
  const res = await fetch(`${h.url}/login`, { method: "POST", redirect: "manual", headers: { "content-type": FORM, origin: h.url }, body: new URLSearchParams({ email, password: TEST_PASSWORD }) });
  return { status: res.status, token: /abuse_intel_session=([^;]*)/.exec(res.headers.get("set-cookie") ?? "")?.[1] ?? "" };
}
/** The status of a console page with `token` as the session cookie, and where it sends the browser. */
async function consolePage(token: string, path = "/console/admin/users"): Promise<{ status: number; location: string | null }> {
  const res = await fetch(`${h.url}${path}`, { headers: { cookie: `abuse_intel_session=${token}` }, redirect: "manual" });
  await res.arrayBuffer();
  return { status: res.status, location: res.headers.get("location") };
}
async function signOut(token: string): Promise<number> {
  const cookie = `abuse_intel_session=${token}`;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await fetch(`${h.url}/console`, { headers: { cookie } })).text())![1];
  const res = await fetch(`${h.url}/logout`, { method: "POST", redirect: "manual", headers: { cookie, origin: h.url, "content-type": FORM }, body: new URLSearchParams({ csrf }) });
  return res.status;
}
/** The token with its last character's unused bits changed: the same signature bytes, another string. */
function respelled(token: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  return token.slice(0, -1) + alphabet[alphabet.indexOf(token.at(-1)!) ^ 1];
}

test("signing in takes the email as the API does: case and surrounding space do not matter", async () => {
  expect((await h.call("POST", "/v1/auth/login", { json: { email: " Root@Example.COM ", password: TEST_PASSWORD } })).status).toBe(200);
  const session = await signIn(" Root@Example.COM ");
  expect(session.status).toBe(303);
  expect((await consolePage(session.token)).status).toBe(200);
});

test("a console session's token is refused by the API, and an API token is no console session", async () => {
  const session = await signIn("root@example.com");
  for (const path of ["/v1/auth/whoami", "/v1/keys"]) {
    expect((await h.call("GET", path, { headers: { authorization: `Bearer ${session.token}` } })).status).toBe(401);
  }
  expect((await h.call("POST", "/v1/keys", { headers: { authorization: `Bearer ${session.token}` }, json: { name: "minted" } })).status).toBe(401);
  const api = (await (await h.call("POST", "/v1/auth/login", { json: { email: "root@example.com", password: TEST_PASSWORD } })).json()) as { accessToken?: string; data?: { accessToken: string } };
  const apiToken = api.accessToken ?? api.data!.accessToken;
  expect((await h.call("GET", "/v1/auth/whoami", { headers: { authorization: `Bearer ${apiToken}` } })).status).toBe(200);
  expect(await consolePage(apiToken)).toEqual({ status: 303, location: "/login" });
});

test("signing out ends the session: under another spelling of its token too, and after a restart", async () => {
  const session = await signIn("root@example.com");
  const other = await signIn("root@example.com");
  expect((await consolePage(session.token)).status).toBe(200);
  // A token has one spelling: another is refused even before any sign-out.
  expect(await consolePage(respelled(session.token))).toEqual({ status: 303, location: "/login" });
  expect(await signOut(session.token)).toBe(303);
  expect(await consolePage(session.token)).toEqual({ status: 303, location: "/login" });
  expect(await consolePage(respelled(session.token))).toEqual({ status: 303, location: "/login" });
  // Another session of the same account goes on.
  expect((await consolePage(other.token)).status).toBe(200);
  h = await h.reopen();
  expect(await consolePage(session.token)).toEqual({ status: 303, location: "/login" });
  expect((await consolePage(other.token)).status).toBe(200);
});
