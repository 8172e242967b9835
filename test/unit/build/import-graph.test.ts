// The dependency rule of ARCHITECTURE.md, checked on the real tree with dependency-cruiser (.dependency-cruiser.cjs):
// no layer imports one above it or a peer, and no module takes part in an import cycle. dependency-cruiser runs
// under Bun: it refuses Node 20, and it reads TypeScript through swc (its TypeScript reader needs typescript < 7).

import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const root = join(import.meta.dir, "../../..");
const CRUISER = join(root, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs");
const CONFIG = join(root, ".dependency-cruiser.cjs");

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

function cruise(cwd: string): { violations: Violation[]; modules: number } {
  const run = Bun.spawnSync([process.execPath, CRUISER, "--config", CONFIG, "--output-type", "json", "src"], { cwd, stdout: "pipe", stderr: "pipe" });
  const text = run.stdout.toString();
  if (!text.startsWith("{")) throw new Error(`dependency-cruiser failed (exit ${run.exitCode}): ${run.stderr.toString()}`);
  const result = JSON.parse(text);
  return { violations: result.summary.violations, modules: result.summary.totalCruised };
}

describe("the import graph of src/", () => {
  test("has no import from a lower layer to a higher one, none between peers, and no cycle", () => {
    const { violations, modules } = cruise(root);
    expect(modules).toBeGreaterThan(100);
    expect(violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).toEqual([]);
  });

  test("the check finds an upward import, a peer import and a cycle when there are some", () => {
    const dir = mkdtempSync(join(tmpdir(), "import-graph-"));
    try {
      const files: Record<string, string> = {
        "src/domain/pure.ts": 'import { use } from "../services/feature";\nexport const pure = () => use;\n',
        "src/services/feature.ts": 'import type { pure } from "../domain/pure";\nexport const use = 1 as unknown as typeof pure;\n',
        "src/http/route.ts": 'import { job } from "../jobs/job";\nexport const route = job;\n',
        "src/jobs/job.ts": "export const job = 1;\n",
      };
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), text);
      }
      copyFileSync(join(root, "tsconfig.json"), join(dir, "tsconfig.json"));
      const names = cruise(dir).violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
      expect(names).toContain("domain-imports-upward: src/domain/pure.ts → src/services/feature.ts");
      expect(names).toContain("http-imports-peer: src/http/route.ts → src/jobs/job.ts");
      expect(names.some((n) => n.startsWith("no-cycle:"))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
