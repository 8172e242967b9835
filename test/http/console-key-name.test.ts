// An API key's name is "1..100 characters, no control characters" (parseKeyName) wherever it is made: the console's
// "Create key" form applies the API's rule too, so no name with terminal escape sequences reaches
// `abuse-intel key list` on an operator's terminal (the form used to check the length only).

import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { addUser, TEST_PASSWORD, type TestUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const FORM = "application/x-www-form-urlencoded";
/** Clears the screen and sets the terminal's title: what a hostile name would carry. */
const HOSTILE = "ci\x1b[2J\x1b]0;owned\x07 key";

let h: Harness;
let user: TestUser;
beforeAll(async () => {
  h = await createHarness();
  user = await addUser(h, { email: "tenant@example.test" });
});
afterAll(() => h.close());

async function consoleCreateKey(name: string): Promise<number> {
  const signIn = await fetch(`${h.url}/login`, { method: "POST", redirect: "manual", headers: { "content-type": FORM, origin: h.url }, body: new URLSearchParams({ email: user.user.email, password: TEST_PASSWORD }) });
  const cookie = `abuse_intel_session=${/abuse_intel_session=([^;]*)/.exec(signIn.headers.get("set-cookie") ?? "")![1]}`;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await fetch(`${h.url}/console/keys`, { headers: { cookie } })).text())![1];
  const res = await fetch(`${h.url}/console/keys`, { method: "POST", headers: { cookie, origin: h.url, "content-type": FORM }, body: new URLSearchParams({ csrf, name }) });
  await res.arrayBuffer();
  return res.status;
}

test("the API refuses a key name with control characters (the rule the console should share)", async () => {
  const res = await h.call("POST", "/v1/keys", { headers: user.jwt, json: { name: HOSTILE } });
  expect(res.status).toBe(400);
});

test("the console refuses it too, and no such name reaches `abuse-intel key list`", async () => {
  const status = await consoleCreateKey(HOSTILE);
  const names = ((await (await h.call("GET", "/v1/keys", { headers: user.jwt })).json()) as { data: { name: string }[] }).data.map((k) => k.name);
  const proc = Bun.spawn([process.execPath, MAIN, "key", "list", "--email", user.user.email, "--data-dir", h.dataDir], { stdout: "pipe", stderr: "pipe" });
  const [stdout, , code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(code).toBe(0);
  // Observed: the console answers 200 with the key made, the API lists the name with ESC and BEL in it, and the
  // CLI writes ESC[2J (clear screen) and an OSC title sequence to the operator's terminal.
  expect({ status, storedNames: names.filter((n) => /[\x00-\x1f\x7f]/.test(n)), cliHasEscape: stdout.includes("\x1b") }).toEqual({ status: 400, storedNames: [], cliHasEscape: false });
}, 20_000);
