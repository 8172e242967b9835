// When a running server writes its index file (DATA_DIR/index.bin, see persisted-index.ts): on its interval in the
// background while the index changes (the requests go on meanwhile), and at a clean stop, which waits for a
// background write still going. One write at a time; an index unchanged since the last write (or since the file
// was read) is left as it is.

import type { RiskThresholds } from "../../domain/risk";
import type { Store } from "../../store/database";
import type { IndexSync } from "./index-sync";
import { type ListingOnlyAddresses, persistIndex, persistIndexInBackground } from "./persisted-index";

export class IndexFileWriter {
  /** The index's generation the file on disk holds (NaN: none yet, so the first interval writes it). */
  private writtenGeneration: number;
  private writing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly sync: IndexSync,
    private readonly thresholds: RiskThresholds,
    private readonly path: string,
    private readonly listings: ListingOnlyAddresses,
  ) {
    // After a rebuild the first interval writes the file; after a load, only a change does.
    this.writtenGeneration = sync.persistedSeq === null ? Number.NaN : sync.index.generation;
  }

  private get changed(): boolean {
    return this.sync.index.generation !== this.writtenGeneration;
  }

  /** The interval's write: in the background, unless one is still going or nothing changed. */
  writeInBackground(): void {
    if (this.writing !== null || !this.changed) return;
    this.writing = persistIndexInBackground(this.store, this.sync, this.thresholds, this.path, this.listings)
      .then(({ indexGeneration }) => {
        this.writtenGeneration = indexGeneration;
      })
      .catch((error) => console.error(`index: writing ${this.path} on its interval failed (the next start replays or rebuilds):`, error))
      .finally(() => {
        this.writing = null;
      });
  }

  /** The stop's write, after a background one still going; logs what it wrote. */
  async writeAtStop(): Promise<void> {
    if (this.writing !== null) await this.writing;
    if (!this.changed) return;
    try {
      const started = performance.now();
      const { bytes, indexGeneration } = persistIndex(this.store, this.sync, this.thresholds, this.path, this.listings);
      this.writtenGeneration = indexGeneration;
      console.log(`index: wrote ${this.path} (${this.sync.index.size} entries, ${Math.round(bytes / 1048576)} MB) in ${Math.round(performance.now() - started)} ms`);
    } catch (error) {
      console.error(`index: writing ${this.path} on shutdown failed (the next start replays or rebuilds):`, error);
    }
  }
}
