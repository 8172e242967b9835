// `npm run bench`: runs every benchmark in this folder, one process each (so one's heap does not skew the
// next), prints their figures and ratios, and exits non-zero if any missed its target.
// `npm run bench -- index blocklist` runs only the named ones; arguments starting with -- go to each of them
// (`npm run bench -- lookup start --binary` runs those two against build/out/abuse-intel).

import { readdirSync } from "node:fs";
import { join } from "node:path";

const here = import.meta.dir;
const wanted = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const passed = process.argv.slice(2).filter((a) => a.startsWith("--"));
const all = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .sort();
const chosen = wanted.length === 0 ? all : all.filter((f) => wanted.some((w) => f.startsWith(w)));
if (chosen.length === 0) {
  console.error(`no benchmark matches ${wanted.join(", ")}; there are: ${all.join(", ")}`);
  process.exit(2);
}

const failed: string[] = [];
for (const file of chosen) {
  console.log(`\n=== ${file} ===`);
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, join(here, file), ...passed], { stdout: "inherit", stderr: "inherit", env: process.env });
  const code = await proc.exited;
  console.log(`--- ${file}: ${code === 0 ? "met its targets" : `MISSED (exit ${code})`} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (code !== 0) failed.push(file);
}
console.log(`\n${chosen.length - failed.length} benchmarks met their targets, ${failed.length} missed${failed.length ? `: ${failed.join(", ")}` : ""}`);
process.exit(failed.length === 0 ? 0 : 1);
