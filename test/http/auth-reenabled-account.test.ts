// Contract 3: "A token of a user who has since been disabled is refused", and a disable is what an operator does when
// an account's credentials leaked. Enabling the account again does not bring back the access tokens and console
// sessions issued before the disable (users.tokens_valid_from): only a new sign-in works.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser, TEST_PASSWORD, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
let admin: TestUser;
beforeAll(async () => {
  h = await createHarness();
  admin = await addUser(h, { role: "admin", tier: "enterprise" });
});
afterAll(() => h.close());

const FORM = "application/x-www-form-urlencoded";
/** Disables or enables an account through the admin API, with time passing around it (tokens carry whole seconds). */
async function setDisabled(id: number, disabled: boolean): Promise<void> {
  h.clock.advance(5_000);
  expect((await h.call("PATCH", `/v1/admin/users/${id}`, { headers: admin.jwt, json: { disabled } })).status).toBe(200);
  h.clock.advance(5_000);
}

async function apiLogin(email: string): Promise<string> {
  const res = await h.call("POST", "/v1/auth/login", { json: { email, password: TEST_PASSWORD } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { accessToken: string } }).data.accessToken;
}

test("an access token issued before the account was disabled stays refused after it is enabled again", async () => {
  const user = await addUser(h);
  const leaked = await apiLogin(user.user.email);
  const whoami = (token: string) => h.call("GET", "/v1/auth/whoami", { headers: { authorization: `Bearer ${token}` } });
  expect((await whoami(leaked)).status).toBe(200);

  await setDisabled(user.user.id, true);
  expect((await whoami(leaked)).status).toBe(401);

  await setDisabled(user.user.id, false);
  // A new sign-in works again...
  expect((await whoami(await apiLogin(user.user.email))).status).toBe(200);
  // ...but the token from before the disable must not (observed: 200, the old token is valid again).
  expect((await whoami(leaked)).status).toBe(401);
  // and with it the user could mint a fresh API key:
  expect((await h.call("POST", "/v1/keys", { headers: { authorization: `Bearer ${leaked}` }, json: { name: "persist" } })).status).toBe(401);
});

test("a console session opened before the account was disabled stays ended after it is enabled again", async () => {
  const user = await addUser(h);
  const res = await fetch(`${h.url}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": FORM, origin: h.url },
    body: new URLSearchParams({ email: user.user.email, password: TEST_PASSWORD }),
  });
  expect(res.status).toBe(303);
  const cookie = `abuse_intel_session=${/abuse_intel_session=([^;]*)/.exec(res.headers.get("set-cookie") ?? "")![1]}`;
  const keysPage = async () => {
    const page = await fetch(`${h.url}/console/keys`, { headers: { cookie }, redirect: "manual" });
    await page.arrayBuffer();
    return page.status;
  };
  expect(await keysPage()).toBe(200);

  await setDisabled(user.user.id, true);
  expect(await keysPage()).toBe(303); // to the sign-in page

  await setDisabled(user.user.id, false);
  expect(await keysPage()).toBe(303); // observed: 200, the session is back
});
