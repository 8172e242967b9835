// The niceness a process running beside a server takes (issue 29): every thread of it, those the runtime started
// before the call (JSC's heap threads, Bun's pool) and the workers started after, read from /proc in a child process.

import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { BACKGROUND_NICENESS } from "../../../src/services/background-priority";

const MODULE = join(import.meta.dir, "../../../src/services/background-priority.ts");

/** A child bun that starts a worker, calls `call` from background-priority, starts another; prints each thread's name and niceness. */
async function threadNiceness(call: string): Promise<{ name: string; nice: number }[]> {
  const script = `
    import { readdirSync, readFileSync } from "node:fs";
    import { ${call} } from ${JSON.stringify(MODULE)};
    const worker = () => { const w = new Worker(URL.createObjectURL(new Blob(["postMessage('up'); setInterval(() => {}, 1000)"], { type: "application/javascript" }))); return new Promise((r) => (w.onmessage = () => r(w))); };
    const before = await worker();
    Bun.gc(true);
    ${call}();
    const after = await worker();
    const threads = readdirSync("/proc/self/task").map((tid) => {
      const stat = readFileSync("/proc/self/task/" + tid + "/stat", "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return { name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), nice: Number(fields[16]) };
    });
    console.log(JSON.stringify(threads));
    process.exit(0);
  `;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  return JSON.parse(out);
}

describe.if(process.platform === "linux")("background priority", () => {
  test(
    "yieldProcessCpuToServers sets every thread's niceness, the workers started before and after it too",
    async () => {
      const threads = await threadNiceness("yieldProcessCpuToServers");
      expect(threads.filter((t) => t.name === "Worker").length).toBeGreaterThanOrEqual(1);
      expect(threads.length).toBeGreaterThan(3);
      expect(threads.filter((t) => t.nice !== BACKGROUND_NICENESS)).toEqual([]);
    },
    60_000,
  );

  test(
    "yieldCpuToServers alone sets the calling thread's only (why the process-wide call exists)",
    async () => {
      const threads = await threadNiceness("yieldCpuToServers");
      expect(threads[0]!.nice).toBe(BACKGROUND_NICENESS);
      expect(threads.some((t) => t.nice !== BACKGROUND_NICENESS)).toBe(true);
    },
    60_000,
  );
});
