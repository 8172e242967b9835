// The `snapshot` job (contract 8, 9): daily at 03:00 UTC, a snapshot of the instance is exported to
// `<data-dir>/snapshots/` and only the newest `keep` (default 7) of the files this job wrote are kept.
// A file is written under a temporary name and renamed when complete, so the directory never holds half a
// snapshot; files in the directory that the job did not name are never touched.

import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { SNAPSHOT_DIRECTORY, snapshotFileName, snapshotFilesNewestFirst } from "../domain/snapshot-files";
import type { Job } from "./scheduler";

/** Writes a complete snapshot file at `outPath` (the exporter of src/services/snapshots/export.ts). */
export type SnapshotExporter = (outPath: string) => unknown | Promise<unknown>;

export const SNAPSHOTS_KEPT = 7;

export interface SnapshotJobDeps {
  dataDir: string;
  /** Null while the product has no snapshot exporter: the job then fails saying so. */
  exporter: SnapshotExporter | null;
  keep?: number;
}

export function snapshotJob(deps: SnapshotJobDeps): Job {
  const keep = deps.keep ?? SNAPSHOTS_KEPT;
  const directory = join(deps.dataDir, SNAPSHOT_DIRECTORY);
  return {
    name: "snapshot",
    description: `exports a snapshot to <data-dir>/${SNAPSHOT_DIRECTORY}/, keeping the newest ${keep}`,
    defaultSchedule: "0 3 * * *",
    async run({ now }) {
      if (deps.exporter === null) {
        throw new Error("snapshot export is not available in this build yet: no snapshot was written");
      }
      mkdirSync(directory, { recursive: true });
      const name = snapshotFileName(now);
      const finalPath = join(directory, name);
      const partial = `${finalPath}.partial`;
      rmSync(partial, { force: true });
      let exported: unknown;
      try {
        exported = await deps.exporter(partial);
        renameSync(partial, finalPath);
      } catch (error) {
        rmSync(partial, { force: true });
        throw error;
      }
      const removed = prune(directory, keep);
      // What the exporter reports (hash, counts…) is kept in the run's result, with the file's final name.
      const details = typeof exported === "object" && exported !== null ? (exported as Record<string, unknown>) : {};
      return { ...details, file: finalPath, bytes: statSync(finalPath).size, removed };
    },
  };
}

/** Deletes all but the newest `keep` snapshot files of the job; returns the names removed. */
export function prune(directory: string, keep: number): string[] {
  const removed = snapshotFilesNewestFirst(readdirSync(directory)).slice(keep);
  for (const name of removed) rmSync(join(directory, name), { force: true });
  return removed;
}
