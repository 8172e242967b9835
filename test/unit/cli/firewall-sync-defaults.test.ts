// `abuse-intel firewall sync` asks the appliance for what a firewall should drop by default: HIGH or worse, as a
// bouncer's filter does (contract 14 and 19). A stand-in appliance on loopback records the pull and answers 503, so
// the sync fails before any kernel work and `--once` exits 1.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
const asked: URL[] = [];
let appliance: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  appliance = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      asked.push(new URL(request.url));
      return new Response("busy", { status: 503 });
    },
  });
});
afterAll(() => appliance.stop(true));

async function syncOnce(extra: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, "firewall", "sync", "--url", `http://127.0.0.1:${appliance.port}`, "--key", "aik_test", "--ipset", "abuse", "--once", ...extra], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  return { stderr, code };
}

test("without --risk-level the pull asks for HIGH and worse; with it, for the level given", async () => {
  asked.length = 0;
  const plain = await syncOnce([]);
  expect(plain.code).toBe(1);
  expect(asked.length).toBeGreaterThan(0);
  expect(asked[0].pathname).toBe("/v1/ip/blocklist");
  expect(asked[0].searchParams.get("riskLevel")).toBe("HIGH");

  asked.length = 0;
  const critical = await syncOnce(["--risk-level", "CRITICAL"]);
  expect(critical.code).toBe(1);
  expect(asked[0].searchParams.get("riskLevel")).toBe("CRITICAL");
}, 60_000);
