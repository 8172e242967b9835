// The forwarder's wait between failed attempts (contract 18: at most 30 s).

import { expect, test } from "bun:test";
import { FORWARD_RETRY_MAX_MS, forwardRetryDelay } from "../../../src/domain/forward-backoff";

test("grows 1, 2, 4, 8, 16 s, then stays at 30 s however long the primary is down", () => {
  expect([1, 2, 3, 4, 5, 6, 7, 100, 100_000].map(forwardRetryDelay)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000]);
  expect(FORWARD_RETRY_MAX_MS).toBe(30_000);
});
