// The names of the files the snapshot job writes (`abuse-intel-20261121T030000Z.sqlite`, with milliseconds when
// not zero: `...T030000400Z`), and their order. Ordered by the time a name holds, not as text: as text a name
// without milliseconds (`...000Z`) sorts after one of the same second with them (`Z` after the digits), so the
// 03:00:00.000 snapshot passed for newer than one made at 03:00:00.400.

/** Where the `snapshot` job writes its files, under the data directory. */
export const SNAPSHOT_DIRECTORY = "snapshots";

const JOB_FILE = /^abuse-intel-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})?Z\.sqlite$/;

export function snapshotFileName(atMs: number): string {
  const iso = new Date(atMs).toISOString(); // 2026-11-21T03:00:00.000Z
  const compact = iso.replace(/[-:]/g, "").replace(/\.(\d{3})Z$/, (_, ms: string) => (ms === "000" ? "Z" : `${ms}Z`));
  return `abuse-intel-${compact}.sqlite`;
}

/** The time a snapshot job's file name holds, or null for any other name. */
export function snapshotFileTime(name: string): number | null {
  const m = JOB_FILE.exec(name);
  if (m === null) return null;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]), Number(m[7] ?? "0"));
}

/** The snapshot job's files among `names`, newest first. */
export function snapshotFilesNewestFirst(names: readonly string[]): string[] {
  const timed: { name: string; time: number }[] = [];
  for (const name of names) {
    const time = snapshotFileTime(name);
    if (time !== null) timed.push({ name, time });
  }
  return timed.sort((a, b) => b.time - a.time).map((t) => t.name);
}
