// Where a worker script of the services is: beside its module when run from the sources; in an executable
// (`bun build --compile` puts its modules under /$bunfs/root/, the sources' src/) the entry point the build adds
// for it (build/build.ts WORKER_ENTRIES), by its path there.

/** The specifier for `new Worker()` of the script at `pathInServices` (under src/services/, e.g. "reports/x.ts"). */
export function workerSpecifier(pathInServices: string): string {
  return import.meta.url.includes("/$bunfs/") ? `./services/${pathInServices}` : new URL(`./${pathInServices}`, import.meta.url).href;
}
