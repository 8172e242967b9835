// The address in a lookup's path is percent-decoded once, by the router: `%25` followed by two hex digits is a
// zone id sent correctly encoded (refused, contract 2), never a character of another address.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addUser, type TestUser } from "../support/accounts";
import { bodyOf, createHarness, type Harness } from "../support/harness";

let h: Harness;
let poller: TestUser;

beforeAll(async () => {
  h = await createHarness();
  poller = await addUser(h, { tier: "free" });
});
afterAll(() => h.close());

describe("the address in the path is percent-decoded once", () => {
  // Bun's router (reputation) and Elysia (detail) already decode path parameters; pathAddress decodes again,
  // so `%25` + two hex digits becomes a character of the address instead of staying a refused zone id.
  test.each([
    ["/v1/ip/fe80::1%2541/reputation", "fe80::1%41"],
    ["/v1/ip/fe80::1%2530/reputation", "fe80::1%30"],
    ["/v1/ip/fe80::1%2541", "fe80::1%41"],
    ["/v1/ip/%2531.2.3.4/reputation", "%31.2.3.4"],
  ])("GET %s (the address %s) is 400, not the answer for another address", async (path, _meant) => {
    const res = await h.call("GET", path, { headers: poller.apiKey });
    const body = await bodyOf(res);
    expect({ status: res.status, code: body.code, answeredFor: body.data?.ipAddress ?? body.ip }).toEqual({ status: 400, code: "bad_request", answeredFor: undefined });
  });
});
