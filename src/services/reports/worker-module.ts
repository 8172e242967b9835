// Where a worker script of the import is: beside the module starting it when run from the sources; in an executable
// (`bun build --compile` puts its modules under /$bunfs/root/, the sources' src/) the entry point the build adds for
// it (build/build.ts WORKER_ENTRIES), by its path there.

/** The specifier for `new Worker()` of the script `fileName` in this folder (services/reports/). */
export function importWorkerSpecifier(fileName: string): string {
  return import.meta.url.includes("/$bunfs/") ? `./services/reports/${fileName}` : new URL(`./${fileName}`, import.meta.url).href;
}
