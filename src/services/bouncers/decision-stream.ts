// One pull of the decisions stream (contract 14): what to send a bouncer given its cursor (the journal's sequence
// number it holds, and when what it holds was sent), and the body, rendered in chunks so a million decisions start
// at once and never sit in memory as one string. The cursor that the caller commits once the body was sent whole
// comes with the plan.

import { ChunkWriter } from "../../domain/blocklist/chunk-writer";
import { goDuration, isV6DecisionId, needsRefresh, v4DecisionAddress, v4DecisionPrefixLength } from "../../domain/decisions";
import type { CursorRow, RefreshBatch } from "../../store/bouncers";
import type { FilterJournal, PullWork } from "./decision-journal";

export interface PullPlan {
  /** Ids to send in `new`, in arrays sent one after the other. */
  added: Float64Array[];
  /** Ids to send in `deleted` (left the list, or sent again: then also in `added`). */
  deleted: Float64Array[];
  /** An IPv6 id's value (listed, or left); undefined: not known, not sent. */
  v6Value: (id: number) => string | undefined;
  /** What the bouncer holds once this answer arrived whole. */
  next: CursorRow;
}

/** What a pull asks for besides its filter (scopes, scenarios): decisions outside it are not sent. */
export interface PullView {
  /** "" for everything (what bouncers ask); else names what the pull narrowed to. */
  key: string;
  /** Whether to send the decision in `new` / in `deleted`; null: all. */
  sendsNew: ((id: number, v6Value: (id: number) => string | undefined) => boolean) | null;
  sendsDeleted: ((id: number, v6Value: (id: number) => string | undefined) => boolean) | null;
}

/** A refresh queue longer than this (pulls with additions, each more than REFRESH_MERGE apart) is sent again whole. */
const MAX_REFRESH_BATCHES = 1024;

/**
 * `startup`: everything listed, in `new`. No cursor (a bouncer whose cursor was dropped, idle or crowded out), or
 * one the journal cannot bring up to date: everything listed in `new`, and in `deleted` what left the list within
 * the bouncer's duration and is not listed now (the removal log: bouncers skip deleting what they do not hold).
 * Otherwise the changes since the cursor: entries that entered go in
 * `new`, entries that left in `deleted` (one that left and entered again in both), and the entries of the refresh
 * queue's batches that are due in both.
 */
export function planPull(journal: FilterJournal, cursor: CursorRow | null, startup: boolean, nowMs: number, durationSeconds: number, work: PullWork): PullPlan {
  const now = Math.floor(nowMs / 1000);
  const seq = journal.seq;
  const { ids, v6 } = journal.list;
  const listedValue = (id: number) => v6.get(id)?.value;
  const whole = (deleted: Float64Array[], values: (id: number) => string | undefined): PullPlan => {
    work.entriesVisited += ids.length;
    const refreshQueue: RefreshBatch[] = [[now, 0, seq]];
    return { added: [ids], deleted, v6Value: values, next: { lastPullAt: nowMs, filterKey: journal.filterKey, seq, refreshQueue, legacy: null } };
  };
  if (startup) return whole([], listedValue);
  const follows = cursor !== null && cursor.filterKey === journal.filterKey && cursor.seq <= seq && cursor.seq >= journal.prunedSeq;
  if (!follows) {
    const left = new Map<number, string | null>();
    for (const r of journal.removedSince(nowMs - durationSeconds * 1000)) left.set(r.id, r.v6Value);
    // A cursor written before the journal holds the ids it was sent: those not listed now left.
    const legacy = cursor?.legacy;
    if (legacy) for (const id of legacy.ids) if (!journal.isListed(id)) left.set(id, legacy.v6Values[id] ?? null);
    work.entriesVisited += left.size;
    const values = (id: number) => listedValue(id) ?? left.get(id) ?? undefined;
    return whole([Float64Array.from(left.keys())], values);
  }
  const added: number[] = [];
  const deleted: number[] = [];
  const leftValues = new Map<number, string>();
  // Each id's first and last change since the cursor tell what the bouncer holds and what it must hold now.
  const firstEntered = new Map<number, boolean>();
  const lastChange = new Map<number, { entered: boolean; v6Value: string | null }>();
  for (const change of journal.changesSince(cursor.seq)) {
    work.entriesVisited++;
    if (!firstEntered.has(change.id)) firstEntered.set(change.id, change.entered);
    lastChange.set(change.id, change);
  }
  for (const [id, last] of lastChange) {
    const heldBefore = !firstEntered.get(id);
    if (last.entered) {
      if (heldBefore) deleted.push(id);
      added.push(id);
    } else if (heldBefore) {
      deleted.push(id);
      if (last.v6Value !== null) leftValues.set(id, last.v6Value);
    }
  }
  const refreshQueue = cursor.refreshQueue.slice();
  const resend = (id: number) => {
    deleted.push(id);
    added.push(id);
  };
  const sentAgain: RefreshBatch[] = [];
  if (refreshQueue.length > MAX_REFRESH_BATCHES) {
    refreshQueue.length = 0;
    journal.eachEnteredIn(0, cursor.seq, resend, work);
    sentAgain.push([now, 0, cursor.seq]);
  }
  while (refreshQueue.length > 0 && needsRefresh(refreshQueue[0][0], durationSeconds, now)) {
    const [, from, to] = refreshQueue.shift() as RefreshBatch;
    journal.eachEnteredIn(from, to, resend, work);
    const last = sentAgain[sentAgain.length - 1];
    if (last !== undefined && last[2] === from) last[2] = to;
    else sentAgain.push([now, from, to]);
  }
  refreshQueue.push(...sentAgain);
  if (seq > cursor.seq) {
    // What entered since the cursor was sent now; a batch just before it, sent less than a hundredth of the
    // duration ago, takes it in (sent again that much early, and the queue stays short).
    const last = refreshQueue[refreshQueue.length - 1];
    if (last !== undefined && last[2] === cursor.seq && now - last[0] <= Math.max(60, durationSeconds / 100)) last[2] = seq;
    else refreshQueue.push([now, cursor.seq, seq]);
  }
  const values = (id: number) => listedValue(id) ?? leftValues.get(id);
  const next: CursorRow = { lastPullAt: nowMs, filterKey: journal.filterKey, seq, refreshQueue, legacy: null };
  return { added: [Float64Array.from(added)], deleted: [Float64Array.from(deleted)], v6Value: values, next };
}

/** A decision as CrowdSec's LAPI writes it: every field present and non-null. */
export function decisionJson(id: number, v6Value: string | null, secondsLeft: number, untilMs: number, scenario: string): string {
  decisionWriter(secondsLeft, untilMs)(shared, id, v6Value, scenario);
  return takeShared();
}

/** Decisions that share a duration and an end as a JSON array, written with one writer. */
export function decisionsJson(decisions: readonly { id: number; v6Value: string | null; scenario: string }[], secondsLeft: number, untilMs: number): string {
  const write = decisionWriter(secondsLeft, untilMs);
  shared.byte(0x5b); // "["
  decisions.forEach((d, i) => {
    if (i > 0) shared.byte(0x2c); // ","
    write(shared, d.id, d.v6Value, d.scenario);
  });
  shared.byte(0x5d); // "]"
  return takeShared();
}

/** One writer for the small answers (`GET /v1/decisions`), reused: a fresh one costs 17 KB of zeroed memory. */
const shared = new ChunkWriter(512);
function takeShared(): string {
  const text = utf8.decode(shared.buf.subarray(0, shared.pos));
  shared.pos = 0;
  return text;
}

/**
 * Writes decisions that share a duration and an end (those of one answer) as bytes, with those parts made once:
 * a million of them as strings were tens of millions of small strings for the collector, and the server's memory
 * grew by up to the body's size while it streamed. `v6Value` is an IPv6 decision's value (null for IPv4: its id
 * carries the address and prefix length).
 */
export function decisionWriter(secondsLeft: number, untilMs: number): (w: ChunkWriter, id: number, v6Value: string | null, scenario: string) => void {
  const tail = `","duration":"${goDuration(secondsLeft)}","until":"${new Date(untilMs).toISOString().slice(0, 19)}Z","scenario":"`;
  return (w, id, v6Value, scenario) => {
    w.ascii('{"id":');
    w.uint(id);
    // The uuid is the id's 20 hex digits in a fixed frame: ab5e1ce0-hhhh-4hhh-8hhh-hhhhhhhhhh00.
    w.ascii(',"uuid":"ab5e1ce0-');
    hexDigits(w, id, 0, 4);
    w.ascii("-4");
    hexDigits(w, id, 4, 7);
    w.ascii("-8");
    hexDigits(w, id, 7, 10);
    w.byte(0x2d); // "-"
    hexDigits(w, id, 10, 20);
    w.ascii('00","origin":"abuse-intel","type":"ban","scope":"');
    if (v6Value !== null) {
      w.ascii(v6Value.includes("/") ? 'Range","value":"' : 'Ip","value":"');
      w.ascii(v6Value);
    } else {
      const prefixLength = v4DecisionPrefixLength(id);
      w.ascii(prefixLength === 32 ? 'Ip","value":"' : 'Range","value":"');
      w.ipv4(v4DecisionAddress(id));
      if (prefixLength !== 32) {
        w.byte(0x2f); // "/"
        w.uint(prefixLength);
      }
    }
    w.ascii(tail);
    w.ascii(scenario);
    w.ascii('"}');
  };
}

const HEX = "0123456789abcdef";

/** Hex digits `from` to `to` of `id` written as 20 (80 bits, most significant first; ids are below 2^53). */
function hexDigits(w: ChunkWriter, id: number, from: number, to: number): void {
  const high = Math.floor(id / 2 ** 32);
  const low = id >>> 0;
  for (let k = from; k < to; k++) {
    const shift = 4 * (19 - k);
    const nibble = shift >= 64 ? 0 : shift >= 32 ? (high >>> (shift - 32)) & 15 : (low >>> shift) & 15;
    w.byte(HEX.charCodeAt(nibble));
  }
}

/** About this many bytes per chunk of the stream. */
const CHUNK_BYTES = 256 * 1024;
const utf8 = new TextDecoder();

export interface StreamBody {
  stream: ReadableStream<Uint8Array>;
}

/**
 * The body `{"new":[...],"deleted":[...]}` as a stream, written by chunks into one reused buffer: a direct stream,
 * whose writes wait while the client is behind (and Bun copies what it must keep), so a million decisions take no
 * more memory than a chunk or two, and the event loop gets a turn after every chunk. `onWhole` runs once the last
 * byte was handed to the connection (before the body's end is), never when the client went away before. `view`
 * leaves decisions out.
 */
export function streamPull(
  plan: PullPlan,
  nowMs: number,
  durationSeconds: number,
  scenario: (id: number) => string,
  onWhole: () => void,
  view: PullView | null = null,
): ReadableStream<Uint8Array> {
  const sections: [string, Float64Array[], PullView["sendsNew"]][] = [
    ["new", plan.added, view?.sendsNew ?? null],
    ["deleted", plan.deleted, view?.sendsDeleted ?? null],
  ];
  const values = plan.v6Value;
  const write = decisionWriter(durationSeconds, nowMs + durationSeconds * 1000);
  let cancelled = false;
  let started = false;
  return new ReadableStream<Uint8Array>({
    type: "direct",
    async pull(controller: ReadableStreamDirectController) {
      // A reader calls pull again after the body was written whole: nothing more to write.
      if (started) return controller.close();
      started = true;
      // A small answer (a delta) gets a small buffer: about 300 bytes a decision.
      let count = 0;
      for (const [, parts] of sections) for (const ids of parts) count += ids.length;
      const w = new ChunkWriter(Math.min(CHUNK_BYTES, 1024 + 300 * count));
      const send = async (last = false) => {
        const written = controller.write(w.buf.subarray(0, w.pos));
        w.pos = 0;
        if (typeof written !== "number") await written;
        else if (!last) await new Promise((resolve) => setImmediate(resolve));
      };
      try {
        w.byte(0x7b); // "{"
        for (const [s, [name, parts, sends]] of sections.entries()) {
          w.ascii(`${s === 0 ? "" : "],"}"${name}":[`);
          let first = true;
          for (const ids of parts) {
            for (let at = 0; at < ids.length; at++) {
              const id = ids[at];
              const v6Value = isV6DecisionId(id) ? values(id) : null;
              if (v6Value === undefined) continue; // an IPv6 id whose value is not known: nothing to send
              if (sends !== null && !sends(id, values)) continue;
              if (!first) w.byte(0x2c); // ","
              write(w, id, v6Value, name === "new" ? scenario(id) : "abuse-intel/delisted");
              first = false;
              if (w.full) {
                await send();
                if (cancelled) return;
              }
            }
          }
        }
        w.ascii("]}");
        await send(true);
        if (cancelled) return;
        // Every byte is handed to the connection: the cursor moves now, before the end of the body tells the
        // client it has it all (a server killed right after cannot have sent it whole and not kept it).
        try {
          onWhole();
        } catch (error) {
          controller.close(error as Error); // the cursor could not be kept: the body ends broken
          return;
        }
        const ended = controller.end();
        if (typeof ended !== "number") await ended;
      } catch {
        // the connection went away: not whole (or gone after the cursor moved, at the very end)
      }
    },
    cancel() {
      cancelled = true;
    },
  } satisfies Bun.DirectUnderlyingSource<Uint8Array>);
}
