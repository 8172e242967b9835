// A read-only edge following its primary (contract section 16): pulls the primary's latest snapshot, verifies
// its signature with the primary's public key before anything else, and hands a verified file to `onSnapshot`
// (which swaps it in). An unchanged snapshot costs a 304; a broken or stalled download resumes where it stopped
// (Range with If-Range); a failed pull or a file that does not verify changes nothing, and the edge keeps serving
// the last good snapshot. A snapshot that is bad for good (signed by another key or not at all, older than the one
// served, or one that cannot be opened) is not downloaded again while the primary publishes it; one that arrived
// damaged is, at the next pull, then less and less often. Files live in <data-dir>/edge/: `current-<hash>.sqlite`,
// `incoming.partial` while pulling, and `discarded-*` while a file let go of is unlinked off the event loop.

import type { KeyObject } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { rm } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Clock } from "../../domain/clock";
import { type SnapshotInfo, snapshotInfo, type VerifyResult, verifySnapshot } from "../snapshots/export";
import { nextTurn } from "../event-loop-turns";
import { type TransferDeadline, transferDeadline } from "./transfer-deadline";

/** A download that receives nothing for this long is given up (the next pull resumes it). */
const PULL_STALL_MS = 30_000;
/** A download that takes longer is given up too, so a body that drips cannot hold the pulls (the next one resumes it). */
const PULL_DEADLINE_MS = 10 * 60_000;
/** The longest wait before a snapshot that arrived damaged is downloaded again. */
const DAMAGED_RETRY_MAX_MS = 60 * 60_000;

export interface FollowerState {
  /** The snapshot served now, or null before the first good one. */
  current: string | null;
  /** When the snapshot served now was made on the primary (ISO), and when it was pulled (ms). */
  snapshotCreatedAt: string | null;
  pulledAt: number | null;
  lastPullAt: number | null;
  /** Why the last pull failed, or null when it succeeded (or nothing was new). */
  lastError: string | null;
}

export interface FollowerDeps {
  /** The primary's base URL. */
  url: string;
  /** An admin's API key on the primary. */
  key: string;
  publicKey: KeyObject;
  /** <data-dir>/edge */
  directory: string;
  clock: Clock;
  onSnapshot: (path: string) => Promise<void>;
  /**
   * Verifies a downloaded file with the public key (integrity, content hash, signature). Default: in this
   * process; a server passes one that runs in a child process, so its event loop keeps answering meanwhile.
   */
  verify?: (path: string) => Promise<VerifyResult>;
  fetch?: typeof fetch;
  log?: (line: string) => void;
  /** Default PULL_STALL_MS and PULL_DEADLINE_MS. */
  stallMs?: number;
  deadlineMs?: number;
}

/** A snapshot not downloaded now, by its ETag: refused for good, or damaged on arrival and waited for. */
interface PassedOver {
  etag: string;
  reason: string;
  /** When it is downloaded again: never (Infinity) for one refused for good. */
  until: number;
  /** Its transfers in a row that arrived damaged. */
  damagedTransfers: number;
}

const CURRENT = /^current-[0-9a-f]{16}\.sqlite$/;
const DISCARDED = /^discarded-\d+-/;

/** Writes all of `bytes` at the end of the file open for appending (a write may take fewer bytes than given). */
function writeAll(file: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length; ) at += writeSync(file, bytes, at, bytes.length - at);
}

export class SnapshotFollower {
  readonly state: FollowerState = { current: null, snapshotCreatedAt: null, pulledAt: null, lastPullAt: null, lastError: null };
  /** When the snapshot served now was made on the primary (ms), or null before the first good one. */
  private servedCreatedAtMs: number | null = null;
  private etag: string | null = null;
  /** Asked for with If-None-Match while it is passed over, so the primary answers 304 and `reason` stays the error. */
  private passed: PassedOver | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private pulling: Promise<string> | null = null;
  /** The download under way (or broken off), and the ETag it belongs to. */
  private readonly partial: string;
  private readonly partialTag: string;
  /** Files discarded so far (their names while they are unlinked). */
  private discarded = 0;

  constructor(private readonly deps: FollowerDeps) {
    mkdirSync(deps.directory, { recursive: true, mode: 0o700 });
    this.partial = join(deps.directory, "incoming.partial");
    this.partialTag = join(deps.directory, "incoming.etag");
    // Files discarded by an earlier run that stopped before they were unlinked.
    for (const n of readdirSync(deps.directory)) if (DISCARDED.test(n)) void rm(join(deps.directory, n), { force: true }).catch(() => {});
  }

  /**
   * Serves the newest verified snapshot kept from an earlier run (at once after a restart of the edge); false when
   * there is none. One that verifies but cannot be served is removed, and the next one tried.
   */
  async resumeFromDisk(): Promise<boolean> {
    const names = readdirSync(this.deps.directory).filter((n) => CURRENT.test(n));
    const candidates = names.map((n) => join(this.deps.directory, n)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    for (const path of candidates) {
      const check = await this.verify(path);
      if (!check.ok || check.signatureValid !== true) continue;
      try {
        await this.adopt(path, check.recordedSha256, snapshotInfo(path));
        return true;
      } catch (error) {
        this.deps.log?.(`edge: ${basename(path)} verifies but cannot be served, removed: ${(error as Error).message}`);
        await this.discard(path);
      }
    }
    return false;
  }

  start(everyMs: number): void {
    void this.pull();
    this.timer = setInterval(() => void this.pull(), everyMs);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One pull: "updated", "unchanged" or "failed" (the reason in state.lastError). One at a time. */
  pull(): Promise<string> {
    this.pulling ??= this.pullOnce().finally(() => (this.pulling = null));
    return this.pulling;
  }

  private async pullOnce(): Promise<string> {
    const { directory, url, key, log } = this.deps;
    const fetcher = this.deps.fetch ?? fetch;
    const now = this.deps.clock.now();
    this.state.lastPullAt = now;
    const { partial, partialTag } = this;
    const passing = this.passed !== null && now < this.passed.until ? this.passed : null;
    const deadline = transferDeadline(this.deps.stallMs ?? PULL_STALL_MS, this.deps.deadlineMs ?? PULL_DEADLINE_MS);
    try {
      const headers: Record<string, string> = { "x-api-key": key };
      const known = passing?.etag ?? this.etag;
      if (known !== null) headers["if-none-match"] = known;
      const resumeFrom = existsSync(partial) && existsSync(partialTag) ? statSync(partial).size : 0;
      if (resumeFrom > 0) {
        headers.range = `bytes=${resumeFrom}-`;
        headers["if-range"] = readFileSync(partialTag, "utf8");
      }
      const res = await fetcher(`${url}/v1/snapshots/latest`, { headers, signal: deadline.signal });
      if (res.status === 304) {
        if (passing !== null) throw new Error(passing.reason);
        this.state.lastError = null;
        return "unchanged";
      }
      if (res.status === 416 && resumeFrom > 0) {
        // The partial no longer fits the snapshot: it is already whole (a pull stopped while verifying it) or of
        // another one. Kept, every later pull would be refused the same way: dropped, and the whole file asked for.
        await res.arrayBuffer();
        this.dropIncoming();
        deadline.done();
        return await this.pullOnce();
      }
      if (res.status !== 200 && res.status !== 206) throw new Error(`the primary answered ${res.status} ${(await res.text()).slice(0, 200)}`);
      const etag = res.headers.get("etag") ?? "";
      // Asked about the one passed over, the primary may answer with the one served, or (ignoring If-None-Match)
      // with the one passed over itself: neither is downloaded.
      if (etag !== "" && (etag === this.etag || etag === passing?.etag)) {
        await res.body?.cancel();
        if (etag === passing?.etag) throw new Error(passing.reason);
        // What a partial file holds is no longer published.
        this.dropIncoming();
        this.state.lastError = null;
        return "unchanged";
      }
      await this.receive(res, etag, deadline);
      // The signature first: nothing of a file that does not verify is ever served.
      const check = await this.verify(partial);
      if (!check.ok || check.signatureValid !== true) {
        const reason = `the snapshot does not verify: ${check.problems.join("; ") || "unsigned"}`;
        // Whole as the primary hashed it: then its signature is what is wrong, and stays wrong. Otherwise it was
        // damaged on the way, or on the primary's disk: fetched again.
        const whole = check.computedSha256 !== null && check.computedSha256 === check.recordedSha256;
        return whole ? this.refuse(etag, reason) : this.retryLater(etag, reason, now);
      }
      let made: SnapshotInfo;
      try {
        made = snapshotInfo(partial);
      } catch (error) {
        return this.refuse(etag, `the snapshot verifies but cannot be read: ${(error as Error).message}`);
      }
      if (this.servedCreatedAtMs !== null && made.createdAtMs <= this.servedCreatedAtMs) {
        return this.refuse(etag, `the primary's snapshot was made at ${made.createdAt}, not after the one served (made ${this.state.snapshotCreatedAt}): an edge never goes back to older data`);
      }
      const name = `current-${(check.recordedSha256 ?? "").slice(0, 16)}.sqlite`;
      const path = join(directory, name);
      renameSync(partial, path);
      rmSync(partialTag, { force: true });
      try {
        await this.adopt(path, check.recordedSha256, made);
      } catch (error) {
        await this.discard(path);
        return this.refuse(etag, `the snapshot verifies but cannot be served: ${(error as Error).message}`);
      }
      this.passed = null;
      log?.(`edge: now serving ${name} (made ${this.state.snapshotCreatedAt})`);
      return "updated";
    } catch (error) {
      this.state.lastError = deadline.signal.aborted
        ? `${(deadline.signal.reason as Error).message}: given up, the next pull resumes it`
        : (error as Error).message;
      log?.(`edge: pull failed, still serving ${this.state.current ?? "nothing yet"}: ${this.state.lastError}`);
      return "failed";
    } finally {
      deadline.done();
    }
  }

  /**
   * The body into the partial file, as it arrives: a broken transfer leaves a partial file the next pull continues.
   * A turn of the event loop after each chunk: a read of a chunk already received resolves at once, so without
   * one a fast primary's whole body went to disk in one hold of the loop (30-70 ms at a time, issue 29).
   */
  private async receive(res: Response, etag: string, deadline: TransferDeadline): Promise<void> {
    if (res.status === 200) {
      writeFileSync(this.partial, "");
      writeFileSync(this.partialTag, etag);
    }
    const reader = res.body?.getReader();
    if (reader) {
      const file = openSync(this.partial, "a");
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          writeAll(file, value);
          deadline.progress();
          await nextTurn();
        }
      } finally {
        closeSync(file);
      }
    }
    deadline.done();
  }

  private dropIncoming(): void {
    void this.discard(this.partial);
    rmSync(this.partialTag, { force: true });
  }

  /**
   * Removes a file without holding the event loop: renamed out of the way at once (the next download may start
   * its own partial file right after), then unlinked on a thread of the pool. Unlinking a snapshot of a million
   * addresses (~200 MB) blocked the loop 70 ms on a disk mounted with `discard` (issue 29).
   */
  private discard(path: string): Promise<void> {
    const doomed = join(this.deps.directory, `discarded-${++this.discarded}-${basename(path)}`);
    try {
      renameSync(path, doomed);
    } catch {
      return Promise.resolve(); // already gone
    }
    return rm(doomed, { force: true }).catch((error: unknown) => this.deps.log?.(`edge: ${basename(doomed)} not removed: ${(error as Error).message}`));
  }

  /** A snapshot bad for good: not downloaded again while the primary publishes it. */
  private refuse(etag: string, reason: string): never {
    this.dropIncoming();
    if (etag !== "") this.passed = { etag, reason, until: Number.POSITIVE_INFINITY, damagedTransfers: 0 };
    throw new Error(reason);
  }

  /**
   * A snapshot that arrived damaged: downloaded again at the next pull, then after 1, 2, 4... minutes (at most an
   * hour), since the damage may be in the primary's own file.
   */
  private retryLater(etag: string, reason: string, now: number): never {
    this.dropIncoming();
    if (etag === "") throw new Error(reason);
    const damagedTransfers = this.passed?.etag === etag ? this.passed.damagedTransfers + 1 : 1;
    const wait = damagedTransfers === 1 ? 0 : Math.min(DAMAGED_RETRY_MAX_MS, 60_000 * 2 ** (damagedTransfers - 2));
    const why = wait === 0 ? reason : `${reason} (arrived damaged ${damagedTransfers} times; downloaded again after ${new Date(now + wait).toISOString()})`;
    this.passed = { etag, reason: why, until: now + wait, damagedTransfers };
    throw new Error(why);
  }

  private verify(path: string): Promise<VerifyResult> {
    return this.deps.verify ? this.deps.verify(path) : Promise.resolve(verifySnapshot(path, this.deps.publicKey));
  }

  private async adopt(path: string, sha256: string | null, made: SnapshotInfo): Promise<void> {
    await this.deps.onSnapshot(path);
    const previous = this.state.current;
    this.state.current = path;
    this.state.snapshotCreatedAt = made.createdAt;
    this.servedCreatedAtMs = made.createdAtMs;
    this.state.pulledAt = this.deps.clock.now();
    this.state.lastError = null;
    this.etag = sha256 === null ? null : `"${sha256}"`;
    // The one before stays until the next swap (requests may still read it); older ones go.
    const older = readdirSync(this.deps.directory)
      .map((n) => join(this.deps.directory, n))
      .filter((p) => CURRENT.test(basename(p)) && p !== path && p !== previous);
    await Promise.all(older.map((p) => this.discard(p)));
  }

  /** What /readyz says on an edge. */
  readiness(): { ready: boolean; body: Record<string, unknown> } {
    const now = this.deps.clock.now();
    const created = this.servedCreatedAtMs;
    return {
      ready: this.state.current !== null,
      body: {
        success: this.state.current !== null,
        status: this.state.current !== null ? "ready" : "starting",
        edge: {
          following: this.deps.url,
          snapshotCreatedAt: this.state.snapshotCreatedAt,
          dataAgeSeconds: created === null ? null : Math.round((now - created) / 1000),
          lastPullAt: this.state.lastPullAt === null ? null : new Date(this.state.lastPullAt).toISOString(),
          lastPullError: this.state.lastError,
        },
      },
    };
  }
}
