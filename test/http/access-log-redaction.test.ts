// `--access-log` never writes a credential sent in the query string (the AbuseIPDB-compatible `?key=`): /api/v2
// reads parameters through URLSearchParams, which decodes their names, so `?%6Bey=<key>` authenticates like
// `?key=<key>` and must be redacted like it (the redaction used to match the literal text `key=` only).

import { afterEach, expect, test } from "bun:test";
import { addUser } from "../support/accounts";
import { createHarness, type Harness } from "../support/harness";
import { writtenToStderr } from "../support/stderr";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test("a key sent as ?%6Bey= (or ?ke%79=) authenticates and is redacted from the access log like ?key=", async () => {
  h = await createHarness({ accessLog: true });
  const user = await addUser(h, { tier: "enterprise" });
  const statuses: number[] = [];
  const written = await writtenToStderr(async () => {
    for (const name of ["key", "%6Bey", "ke%79"]) statuses.push((await h!.call("GET", `/api/v2/check?ipAddress=198.51.100.7&${name}=${user.key}`)).status);
  });
  // All three are the same credential to the server...
  expect(statuses).toEqual([200, 200, 200]);
  const lines = written.filter((l) => l.includes("/api/v2/check"));
  expect(lines).toHaveLength(3);
  // ...so none of them may put the key in the log (observed: the second and third lines hold the whole key).
  expect(lines.filter((l) => l.includes(user.key))).toEqual([]);
});
