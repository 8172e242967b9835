// The flags the executable is compiled with carry decisions that broke things when they were wrong. Elysia
// reads the source text of handlers and hooks: plain --minify (identifiers) silently disabled its query range
// checks, and --minify-whitespace made it drop the X-RateLimit-* headers the auth macro sets. A compiled
// executable otherwise reads .env and bunfig.toml from whatever directory it is started in.

import { describe, expect, test } from "bun:test";
import { compileArgs } from "../../../build/build";

describe("build/build.ts compile arguments", () => {
  const args = compileArgs("/tmp/out/abuse-intel");

  test.each([
    ["--compile"],
    ["--minify-syntax"],
    ["--no-compile-autoload-dotenv"],
    ["--no-compile-autoload-bunfig"],
    ["--outfile=/tmp/out/abuse-intel"],
  ])("include %s", (flag) => {
    expect(args).toContain(flag);
  });

  test.each([["--minify"], ["--minify-identifiers"], ["--minify-whitespace"], ["--compile-autoload-dotenv"], ["--compile-autoload-bunfig"]])(
    "never include %s",
    (flag) => {
      expect(args).not.toContain(flag);
    },
  );

  test("compile src/main.ts, the one command-line entry, first; then the worker scripts (the import's, the snapshots', the feed list parser's)", () => {
    const entries = args.filter((a) => a.endsWith(".ts"));
    expect(entries[0]).toMatch(/\/src\/main\.ts$/);
    expect(entries.slice(1).map((e) => e.slice(e.indexOf("/src/") + 1))).toEqual([
      "src/services/reports/parse-worker.ts",
      "src/services/reports/score-worker.ts",
      "src/services/snapshots/export-worker.ts",
      "src/services/snapshots/blob-reader-worker.ts",
      "src/services/feeds/feed-parse-worker.ts",
    ]);
    expect(args.slice(-entries.length)).toEqual(entries);
    expect(args[0]).toBe("build");
  });
});
