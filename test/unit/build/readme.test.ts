// The README is the operator's manual: it must open with the two commands that work on a fresh machine and
// document every option the program accepts, so an option added to src/config.ts without docs fails here.

import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { JOB_SCHEDULE_ENV_PREFIX, OPTIONS } from "../../../src/config";

const root = join(import.meta.dir, "../../..");
const readme = readFileSync(join(root, "README.md"), "utf8");

describe("README.md", () => {
  test("starts with `npm install && npm start` and `npm install && npm test`", () => {
    const lines = readme.split("\n").filter((line) => line.trim() !== "");
    expect(lines[0]).toMatch(/^# /);
    expect(lines[1]).toMatch(/^```/);
    expect(lines[2]).toMatch(/^npm install && npm start\b/);
    expect(lines[3]).toMatch(/^npm install && npm test\b/);
  });

  test.each(OPTIONS.map((o) => [o.flag, o.env]))("documents %s and %s", (flag, env) => {
    expect(readme).toContain(`\`${flag}\``);
    expect(readme).toContain(`\`${env}\``);
  });

  test("documents the job schedule option and variables", () => {
    expect(readme).toContain("`--schedule NAME=CRON`");
    expect(readme).toContain(`\`${JOB_SCHEDULE_ENV_PREFIX}<NAME>\``);
  });

  test("links only to files that exist, and to headings those files have", () => {
    const links = [...readme.matchAll(/\]\(((?!https?:|#)[^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(0);
    const broken = links.filter((link) => {
      const [file, anchor] = link.split("#");
      if (!existsSync(join(root, file))) return true;
      if (anchor === undefined) return false;
      // GitHub's anchors: headings lowercased, punctuation dropped, spaces as hyphens.
      const headings = [...readFileSync(join(root, file), "utf8").matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1].toLowerCase().replace(/[^\p{L}\p{N} -]/gu, "").replaceAll(" ", "-"),
      );
      return !headings.includes(anchor);
    });
    expect(broken).toEqual([]);
  });
});
