// Where a worker script of the import is (src/services/worker-module.ts finds it, sources or executable).

import { workerSpecifier } from "../worker-module";

/** The specifier for `new Worker()` of the script `fileName` in this folder (services/reports/). */
export function importWorkerSpecifier(fileName: string): string {
  return workerSpecifier(`reports/${fileName}`);
}
