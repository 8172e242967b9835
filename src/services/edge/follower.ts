// A read-only edge following its primary (contract section 16): pulls the primary's latest snapshot, verifies
// its signature with the primary's public key before anything else, and hands a verified file to `onSnapshot`
// (which swaps it in). An unchanged snapshot costs a 304; a broken or stalled download resumes where it stopped
// (Range with If-Range); a failed pull or a file that does not verify changes nothing, and the edge keeps serving the last
// good snapshot. Files live in <data-dir>/edge/: `current-<hash>.sqlite`, and `incoming.partial` while pulling.

import type { KeyObject } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../domain/clock";
import { snapshotInfo, type VerifyResult, verifySnapshot } from "../snapshots/export";
import { type TransferDeadline, transferDeadline } from "./transfer-deadline";

/** A download that receives nothing for this long is given up (the next pull resumes it). */
export const PULL_STALL_MS = 30_000;
/** A download that takes longer is given up too, so a body that drips cannot hold the pulls (the next one resumes it). */
export const PULL_DEADLINE_MS = 10 * 60_000;

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

const CURRENT = /^current-[0-9a-f]{16}\.sqlite$/;

export class SnapshotFollower {
  readonly state: FollowerState = { current: null, snapshotCreatedAt: null, pulledAt: null, lastPullAt: null, lastError: null };
  private etag: string | null = null;
  /** The ETag of the newest snapshot that did not verify, and why: asked with If-None-Match, not downloaded again. */
  private refused: { etag: string; reason: string } | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private pulling: Promise<string> | null = null;

  constructor(private readonly deps: FollowerDeps) {
    mkdirSync(deps.directory, { recursive: true, mode: 0o700 });
  }

  /** The newest verified snapshot kept from an earlier run (served at once after a restart of the edge), or null. */
  async resumeFromDisk(): Promise<boolean> {
    const names = readdirSync(this.deps.directory).filter((n) => CURRENT.test(n));
    const candidates = names.map((n) => join(this.deps.directory, n)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    for (const path of candidates) {
      const check = await this.verify(path);
      if (check.ok && check.signatureValid === true) {
        await this.adopt(path, check.recordedSha256);
        return true;
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
    this.state.lastPullAt = this.deps.clock.now();
    const partial = join(directory, "incoming.partial");
    const partialTag = join(directory, "incoming.etag");
    const deadline = transferDeadline(this.deps.stallMs ?? PULL_STALL_MS, this.deps.deadlineMs ?? PULL_DEADLINE_MS);
    try {
      const headers: Record<string, string> = { "x-api-key": key };
      const known = this.refused?.etag ?? this.etag;
      if (known !== null) headers["if-none-match"] = known;
      const resumeFrom = existsSync(partial) && existsSync(partialTag) ? statSync(partial).size : 0;
      if (resumeFrom > 0) {
        headers.range = `bytes=${resumeFrom}-`;
        headers["if-range"] = readFileSync(partialTag, "utf8");
      }
      const res = await fetcher(`${url}/v1/snapshots/latest`, { headers, signal: deadline.signal });
      if (res.status === 304) {
        if (this.refused !== null) throw new Error(this.refused.reason);
        this.state.lastError = null;
        return "unchanged";
      }
      // Another snapshot than the one refused: it gets its chance.
      this.refused = null;
      if (res.status === 416 && resumeFrom > 0) {
        // The partial no longer fits the snapshot: it is already whole (a pull stopped while verifying it) or of
        // another one. Kept, every later pull would be refused the same way: dropped, and the whole file asked for.
        await res.arrayBuffer();
        rmSync(partial, { force: true });
        rmSync(partialTag, { force: true });
        deadline.done();
        return await this.pullOnce();
      }
      if (res.status !== 200 && res.status !== 206) throw new Error(`the primary answered ${res.status} ${(await res.text()).slice(0, 200)}`);
      const etag = res.headers.get("etag") ?? "";
      await this.receive(res, etag, deadline);
      // The signature first: nothing of a file that does not verify is ever served.
      const check = await this.verify(partial);
      if (!check.ok || check.signatureValid !== true) {
        rmSync(partial, { force: true });
        rmSync(partialTag, { force: true });
        const reason = `the snapshot does not verify: ${check.problems.join("; ") || "unsigned"}`;
        if (etag !== "") this.refused = { etag, reason };
        throw new Error(reason);
      }
      const name = `current-${(check.recordedSha256 ?? "").slice(0, 16)}.sqlite`;
      const path = join(directory, name);
      renameSync(partial, path);
      rmSync(partialTag, { force: true });
      await this.adopt(path, check.recordedSha256);
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

  /** The body into the partial file, as it arrives: a broken transfer leaves a partial file the next pull continues. */
  private async receive(res: Response, etag: string, deadline: TransferDeadline): Promise<void> {
    const partial = join(this.deps.directory, "incoming.partial");
    if (res.status === 200) {
      writeFileSync(partial, "");
      writeFileSync(join(this.deps.directory, "incoming.etag"), etag);
    }
    const reader = res.body?.getReader();
    if (reader) {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        appendFileSync(partial, value);
        deadline.progress();
      }
    }
    deadline.done();
  }

  private verify(path: string): Promise<VerifyResult> {
    return this.deps.verify ? this.deps.verify(path) : Promise.resolve(verifySnapshot(path, this.deps.publicKey));
  }

  private async adopt(path: string, sha256: string | null): Promise<void> {
    await this.deps.onSnapshot(path);
    const previous = this.state.current;
    this.state.current = path;
    this.state.snapshotCreatedAt = snapshotInfo(path).createdAt;
    this.state.pulledAt = this.deps.clock.now();
    this.state.lastError = null;
    this.etag = sha256 === null ? null : `"${sha256}"`;
    // The one before stays until the next swap (requests may still read it); older ones go.
    for (const n of readdirSync(this.deps.directory)) {
      const p = join(this.deps.directory, n);
      if (CURRENT.test(n) && p !== path && p !== previous) rmSync(p, { force: true });
    }
  }

  /** What /readyz says on an edge. */
  readiness(): { ready: boolean; body: Record<string, unknown> } {
    const now = this.deps.clock.now();
    const created = this.state.snapshotCreatedAt === null ? null : Date.parse(this.state.snapshotCreatedAt);
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
