// A small filesystem of its own for a test that fills a disk: a tmpfs mounted on a temporary directory (root
// only; skipped elsewhere unless ABUSE_INTEL_FIREWALL_TESTS=required, as CI sets it), and a filler file that
// takes its free space.

import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FIREWALL_TESTS_REQUIRED } from "./netns";

export interface SmallDisk {
  /** False when no tmpfs could be mounted: the test is to be skipped. */
  mounted: boolean;
  path: string;
  /** Takes the disk's free space, all of it but `leaveBytes` (with a filler file; free() gives it back). */
  fill(leaveBytes?: number): void;
  free(): void;
  unmount(): void;
}

export function mountSmallDisk(size: string, what: string): SmallDisk {
  const path = mkdtempSync(join(tmpdir(), "abuse-intel-small-disk-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", path]).status === 0;
  if (!mounted) {
    if (FIREWALL_TESTS_REQUIRED) throw new Error(`cannot mount a tmpfs for ${what} (needs root)`);
    console.warn(`${what} skipped: cannot mount a tmpfs here (needs root)`);
  }
  const filler = join(path, "filler");
  return {
    mounted,
    path,
    fill(leaveBytes = 0) {
      const fd = openSync(filler, "w");
      const block = new Uint8Array(16 * 1024);
      let written = 0;
      try {
        for (;;) written += writeSync(fd, block);
      } catch {
        // ENOSPC: full.
      } finally {
        closeSync(fd);
      }
      if (leaveBytes > 0) spawnSync("truncate", ["-s", String(Math.max(0, written - leaveBytes)), filler]);
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      if (mounted) spawnSync("umount", ["-l", path]);
      rmSync(path, { recursive: true, force: true });
    },
  };
}
