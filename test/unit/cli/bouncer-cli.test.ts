// `abuse-intel bouncer add|list|delete` as an operator runs them (contract 14), each command the real CLI in its own
// process: the key printed once inside a ready snippet for the mode, the list, the delete, and refusals.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../../src/main.ts");
let dir: string;

async function run(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dir], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ABUSE_INTEL_DATA_DIR: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "abuse-intel-bouncer-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("abuse-intel bouncer", () => {
  test("add in ipset mode prints the configuration lines with the key, and the two sets to create", async () => {
    const { stdout, stderr, code } = await run(["bouncer", "add", "fw1", "--mode", "ipset", "--risk-level", "critical", "--url", "http://10.0.0.5:8080/"]);
    expect(code).toBe(0);
    expect(stderr).toContain("Added bouncer fw1 (ipset, CRITICAL and worse, 596h0m0s)");
    expect(stdout).toContain("mode: ipset\napi_url: http://10.0.0.5:8080/\napi_key: aik_");
    expect(stdout).toMatch(/api_key: aik_[A-Za-z0-9_-]{40}\n/);
    expect(stdout).toContain("ipset create crowdsec-blacklists hash:net timeout 0");
    expect(stdout).toContain("ipset create crowdsec6-blacklists hash:net timeout 0 family inet6");
  });

  test("add in nftables mode (the default) with categories and a duration", async () => {
    const { stdout, code } = await run(["bouncer", "add", "fw2", "--category", "ssh,brute-force", "--duration", "24h"]);
    expect(code).toBe(0);
    expect(stdout).toContain("mode: nftables\n");
    expect(stdout).not.toContain("ipset create");
  });

  test("list shows both, never a key; --json too", async () => {
    const { stdout, code } = await run(["bouncer", "list"]);
    expect(code).toBe(0);
    expect(stdout).toContain("fw1");
    expect(stdout).toContain("fw2");
    expect(stdout).not.toContain("aik_");
    const json = JSON.parse((await run(["bouncer", "list", "--json"])).stdout) as { name: string; mode: string; categories: string[] | null; duration: string; lastPullAt: null }[];
    expect(json.map((b) => [b.name, b.mode, b.categories, b.duration, b.lastPullAt])).toEqual([
      ["fw1", "ipset", null, "596h0m0s", null],
      ["fw2", "nftables", ["BRUTE_FORCE", "SSH"], "24h0m0s", null],
    ]);
  });

  test.each([
    [["bouncer", "add", "fw1"], "exists"],
    [["bouncer", "add", "fw3", "--mode", "pf"], "--mode"],
    [["bouncer", "add", "fw3", "--duration", "700h"], "596h"],
    [["bouncer", "add", "fw3", "--category", "nothing"], "nothing"],
    [["bouncer", "add"], "NAME"],
    [["bouncer", "delete", "nope"], "No bouncer"],
  ])("%j is refused naming %s, exit 1, nothing added", async (args, message) => {
    const { stderr, code } = await run(args);
    expect(code).not.toBe(0);
    expect(stderr).toContain(message);
    const names = (JSON.parse((await run(["bouncer", "list", "--json"])).stdout) as { name: string }[]).map((b) => b.name);
    expect(names).toEqual(["fw1", "fw2"]);
  });

  test("delete removes it", async () => {
    const { stdout, code } = await run(["bouncer", "delete", "fw2"]);
    expect(code).toBe(0);
    expect(stdout).toContain("Deleted bouncer fw2");
    const names = (JSON.parse((await run(["bouncer", "list", "--json"])).stdout) as { name: string }[]).map((b) => b.name);
    expect(names).toEqual(["fw1"]);
  });
});
