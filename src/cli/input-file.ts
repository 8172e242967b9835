// The files commands read where an operator names them (`import reports FILE`, `import blocklist FILE`): refused
// (exit 2) saying what is there instead, before anything is opened.

import type { BunFile } from "bun";
import { statSync } from "node:fs";
import { AppError } from "../domain/errors";

/** The file at `path`; a missing path and a directory are refused apart: a typo and a wrong level are different mistakes. */
export function inputFile(path: string): BunFile {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined) throw new AppError("not_found", `no such file: ${path}`);
  if (stats.isDirectory()) throw new AppError("bad_request", `${path} is a directory, not a file: name the file in it`);
  return Bun.file(path);
}
