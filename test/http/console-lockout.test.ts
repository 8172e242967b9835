// The console's sign-in has "the same lockout as POST /v1/auth/login" (contract 15), whose 429 carries Retry-After
// until the window passes (contract 3): the console's locked-out answer carries it too.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { addUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

test("a locked-out console sign-in answers 429 with Retry-After, as the API's login does", async () => {
  const user = await addUser(h);
  const consoleSignIn = async () => {
    const res = await fetch(`${h.url}/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: h.url },
      body: new URLSearchParams({ email: user.user.email, password: "not the password" }),
    });
    await res.arrayBuffer();
    return res;
  };
  for (let i = 0; i < 10; i++) expect((await consoleSignIn()).status).toBe(401);
  const api = await h.call("POST", "/v1/auth/login", { json: { email: user.user.email, password: "not the password" } });
  expect(api.status).toBe(429);
  expect(api.headers.get("retry-after")).toBe("900");
  const locked = await consoleSignIn();
  expect(locked.status).toBe(429);
  expect(locked.headers.get("retry-after")).toBe("900"); // observed: null
}, 20_000);
