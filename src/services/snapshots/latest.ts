// The primary's latest snapshot for edges (contract section 16): the newest file the snapshot job wrote under
// <data-dir>/snapshots/, with its content hash as a strong ETag (read once per file). A primary that signs its
// snapshots serves the newest signed one: an unsigned file in the directory (`jobs run snapshot` from a shell
// without the key) would be refused for good by every edge that checks signatures.

import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { snapshotFilesNewestFirst } from "../../domain/snapshot-files";
import { SNAPSHOT_DIRECTORY } from "../../domain/snapshot-files";
import { snapshotInfo } from "./export";

export interface LatestSnapshot {
  path: string;
  bytes: number;
  /** The quoted content hash. */
  etag: string;
  createdAt: string;
  signed: boolean;
}

export class LatestSnapshots {
  /** What each file holds, by path, while its mtime stays the same. */
  private readonly known = new Map<string, { mtimeMs: number; snapshot: LatestSnapshot }>();

  constructor(
    private readonly dataDir: string,
    /** Serve signed snapshots only (this server signs the ones its job makes). */
    private readonly signedOnly = false,
  ) {}

  /** The newest snapshot the job wrote (the newest signed one when signedOnly), or null when there is none yet. */
  latest(): LatestSnapshot | null {
    const directory = join(this.dataDir, SNAPSHOT_DIRECTORY);
    if (!existsSync(directory)) return null;
    const names = snapshotFilesNewestFirst(readdirSync(directory));
    for (const name of names) {
      const snapshot = this.snapshotAt(join(directory, name));
      if (snapshot !== null && (snapshot.signed || !this.signedOnly)) return snapshot;
    }
    return null;
  }

  private snapshotAt(path: string): LatestSnapshot | null {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      return null; // pruned meanwhile
    }
    const known = this.known.get(path);
    if (known !== undefined && known.mtimeMs === stat.mtimeMs) return known.snapshot;
    const info = snapshotInfo(path);
    const snapshot = { path, bytes: stat.size, etag: `"${info.sha256 ?? `${stat.size}-${stat.mtimeMs}`}"`, createdAt: info.createdAt, signed: info.signed };
    if (this.known.size > 32) this.known.clear();
    this.known.set(path, { mtimeMs: stat.mtimeMs, snapshot });
    return snapshot;
  }
}
