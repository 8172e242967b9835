// The primary's latest snapshot for edges (contract section 16): the newest file the snapshot job wrote under
// <data-dir>/snapshots/, with its content hash as a strong ETag (read once per file).

import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { SNAPSHOT_DIRECTORY, snapshotInfo } from "./export";

const JOB_FILE = /^abuse-intel-\d{8}T\d{6}(?:\d{3})?Z\.sqlite$/;

export interface LatestSnapshot {
  path: string;
  bytes: number;
  /** The quoted content hash. */
  etag: string;
  createdAt: string;
  signed: boolean;
}

export class LatestSnapshots {
  private cached: { path: string; mtimeMs: number; latest: LatestSnapshot } | null = null;

  constructor(private readonly dataDir: string) {}

  /** The newest snapshot the job wrote, or null when there is none yet. */
  latest(): LatestSnapshot | null {
    const directory = join(this.dataDir, SNAPSHOT_DIRECTORY);
    if (!existsSync(directory)) return null;
    const name = readdirSync(directory).filter((n) => JOB_FILE.test(n)).sort().at(-1);
    if (name === undefined) return null;
    const path = join(directory, name);
    const stat = statSync(path);
    if (this.cached !== null && this.cached.path === path && this.cached.mtimeMs === stat.mtimeMs) return this.cached.latest;
    const info = snapshotInfo(path);
    const latest = { path, bytes: stat.size, etag: `"${info.sha256 ?? `${stat.size}-${stat.mtimeMs}`}"`, createdAt: info.createdAt, signed: info.signed };
    this.cached = { path, mtimeMs: stat.mtimeMs, latest };
    return latest;
  }
}
