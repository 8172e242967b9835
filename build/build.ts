// Builds the one executable, build/out/abuse-intel: prepares the generated inputs (embedded migrations, the
// packed enrichment table), compiles src/main.ts with `bun build --compile`, and smoke-tests the result.
// `bun build/build.ts --prepare` only prepares the inputs; `npm start` and `npm test` run it first.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import pkg from "../package.json" with { type: "json" };

const root = join(import.meta.dir, "..");
export const OUTFILE = join(root, "build/out/abuse-intel");
const ENTRY = join(root, "src/main.ts");
/**
 * Worker scripts the program starts (src/services/worker-module.ts names them inside the executable): compiled in as
 * further entry points after the program's, which stays first (the first entry is what the executable runs).
 */
export const WORKER_ENTRIES = ["src/services/reports/parse-worker.ts", "src/services/reports/score-worker.ts", "src/services/snapshots/export-worker.ts", "src/services/snapshots/blob-reader-worker.ts", "src/services/feeds/feed-parse-worker.ts"].map((file) => join(root, file));
const PACK_ENRICHMENT = join(root, "build/pack-enrichment.ts");
const EMBED_MIGRATIONS = join(root, "build/embed-migrations.ts");

/**
 * The arguments of `bun build` for the executable. Syntax minification only, because Elysia reads the source
 * text of handlers and hooks (Function.toString) to decide what each request needs:
 * - identifier minification (part of plain --minify) renames what it looks for: query range checks vanished;
 * - whitespace minification puts a method-shorthand hook (`async resolve({ request, set }) {...}`) on one
 *   line, which its parser splits at the first newline: headers a macro set (X-RateLimit-*) were dropped.
 * The executable reads no .env or bunfig.toml from the directory it is started in: a stray file there must
 * not change a server.
 */
export function compileArgs(outfile: string = OUTFILE): string[] {
  return [
    "build",
    "--compile",
    "--minify-syntax",
    // Stack traces of an internal error name our source files; the map is embedded in the executable.
    "--sourcemap=linked",
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    "--no-compile-autoload-tsconfig",
    "--no-compile-autoload-package-json",
    `--outfile=${outfile}`,
    ENTRY,
    ...WORKER_ENTRIES,
  ];
}

/** Runs a Bun script or command with the Bun that runs this file; throws when it fails. */
function runBun(args: string[], what: string): void {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: "inherit", env: process.env });
  if (result.status !== 0) {
    throw new Error(`${what} failed (exit ${result.status ?? result.signal})`);
  }
  console.log(`build: ${what} (${Math.round(performance.now() - started)} ms)`);
}

/** Writes the generated inputs every way of running the program needs; each step skips work when up to date. */
export function prepare(): void {
  // The migrations module is committed; this only rewrites it after `drizzle-kit generate` added a migration.
  // test/unit/build checks that the committed module matches drizzle/.
  runBun([EMBED_MIGRATIONS], "embedded migrations");
  if (existsSync(PACK_ENRICHMENT)) {
    runBun([PACK_ENRICHMENT], "enrichment table");
  } else {
    console.warn("build: build/pack-enrichment.ts not present yet; skipping the enrichment table");
  }
}

function compile(): void {
  mkdirSync(join(root, "build/out"), { recursive: true });
  runBun(compileArgs(), `compiled ${relative(root, OUTFILE)}`);
  // The executable carries its own copy of the source map; the one written beside it is not needed.
  rmSync(`${OUTFILE}.map`, { force: true });
  const version = spawnSync(OUTFILE, ["--version"], { cwd: "/", encoding: "utf8" });
  if (version.status !== 0 || version.stdout.trim() !== pkg.version) {
    throw new Error(`the executable does not run: --version gave exit ${version.status}, "${version.stdout.trim()}" ${version.stderr}`);
  }
  const megabytes = (statSync(OUTFILE).size / 1024 / 1024).toFixed(1);
  console.log(`build: ${relative(root, OUTFILE)} ${pkg.version}, ${megabytes} MB`);
}

if (import.meta.main) {
  try {
    prepare();
    if (!process.argv.includes("--prepare")) compile();
  } catch (error) {
    console.error(`build: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
