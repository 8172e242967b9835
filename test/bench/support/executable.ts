// The built executable for benchmarks that measure it: built (`bun build/build.ts`) when it is missing or older
// than a source file, so `npm run bench` works on a fresh clone as `npm test` does.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..", "..");
export const EXECUTABLE = join(root, "build/out/abuse-intel");

function newestMtimeMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether build/out/abuse-intel is missing or older than src/, drizzle/ or package.json. */
export function executableIsStale(): boolean {
  if (!existsSync(EXECUTABLE)) return true;
  const built = statSync(EXECUTABLE).mtimeMs;
  const sources = Math.max(newestMtimeMs(join(root, "src")), newestMtimeMs(join(root, "drizzle")), statSync(join(root, "package.json")).mtimeMs);
  return sources > built;
}

/** The path of an up-to-date executable, built first when needed; exits the benchmark when the build fails. */
export function ensureExecutable(): string {
  if (!executableIsStale()) return EXECUTABLE;
  console.log(`# building ${EXECUTABLE} (missing or older than the sources)`);
  const result = spawnSync(process.execPath, [join(root, "build/build.ts")], { cwd: root, stdio: "inherit", env: process.env });
  if (result.status !== 0) {
    console.error("the build failed: the benchmark needs the executable");
    process.exit(1);
  }
  return EXECUTABLE;
}
