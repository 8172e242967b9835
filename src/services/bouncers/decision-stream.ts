// One pull of the decisions stream (contract 14): what to send a bouncer given what it was last sent whole (its
// cursor), and the body, rendered in chunks so a million decisions start at once and never sit in memory as one
// string. The cursor that the caller commits once the body was sent whole comes with the plan.

import { ChunkWriter } from "../../domain/blocklist/chunk-writer";
import { goDuration, isV6DecisionId, needsRefresh, v4DecisionAddress, v4DecisionPrefixLength } from "../../domain/decisions";
import type { CursorRow } from "../../store/bouncers";
import type { DecisionList } from "./decision-list";

export interface PullPlan {
  /** Ids to send in `new`, with the seconds left on each. */
  added: Float64Array;
  /** Ids to send in `deleted` (left the list, or refreshed: then also in `added`). */
  deleted: Float64Array;
  /** What the bouncer holds once this answer arrived whole. */
  next: CursorRow;
}

/**
 * `startup` (or no cursor yet): everything listed, in `new`. Otherwise the difference from the cursor: entries
 * that entered go in `new`, entries that left in `deleted`, and entries about to run out in both. `list` is what
 * the pull asks about; a held entry for which `outOfPull` is true (of a scope the pull leaves out) is not part of
 * the difference: kept in the cursor as it was, neither deleted nor refreshed.
 */
export function planPull(
  list: DecisionList,
  cursor: CursorRow | null,
  startup: boolean,
  nowMs: number,
  durationSeconds: number,
  outOfPull: ((id: number) => boolean) | null = null,
): PullPlan {
  const now = Math.floor(nowMs / 1000);
  const ids = list.ids;
  const sentAt = new Uint32Array(ids.length);
  const v6Values: Record<string, string> = {};
  for (const [id, v] of list.v6) v6Values[id] = v.value;
  if (startup || cursor === null) {
    sentAt.fill(now);
    return { added: ids, deleted: new Float64Array(0), next: { lastPullAt: nowMs, ids, sentAt, v6Values } };
  }
  const added: number[] = [];
  const deleted: number[] = [];
  const old = cursor.ids;
  const kept: number[] = [];
  const leftOrKept = (k: number) => {
    if (outOfPull?.(old[k])) kept.push(k);
    else deleted.push(old[k]);
  };
  let j = 0;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    while (j < old.length && old[j] < id) leftOrKept(j++);
    if (j < old.length && old[j] === id) {
      const was = cursor.sentAt[j++];
      if (needsRefresh(was, durationSeconds, now)) {
        deleted.push(id);
        added.push(id);
        sentAt[i] = now;
      } else {
        sentAt[i] = was;
      }
    } else {
      added.push(id);
      sentAt[i] = now;
    }
  }
  while (j < old.length) leftOrKept(j++);
  // Values of IPv6 decisions that left come from the cursor (the list no longer knows them); kept in the next
  // cursor too, which is what the answer is rendered from.
  for (const id of deleted) if (isV6DecisionId(id) && v6Values[id] === undefined && cursor.v6Values[id] !== undefined) v6Values[id] = cursor.v6Values[id];
  for (const k of kept) if (isV6DecisionId(old[k]) && cursor.v6Values[old[k]] !== undefined) v6Values[old[k]] = cursor.v6Values[old[k]];
  const next = kept.length === 0 ? { ids, sentAt } : withKept(ids, sentAt, cursor, kept);
  return { added: Float64Array.from(added), deleted: Float64Array.from(deleted), next: { lastPullAt: nowMs, ...next, v6Values } };
}

/** The pull's ids and times merged with the cursor's entries at `kept` (both ascending), in id order. */
function withKept(ids: Float64Array, sentAt: Uint32Array, cursor: CursorRow, kept: number[]): { ids: Float64Array; sentAt: Uint32Array } {
  const outIds = new Float64Array(ids.length + kept.length);
  const outSent = new Uint32Array(outIds.length);
  let i = 0;
  let k = 0;
  for (let o = 0; o < outIds.length; o++) {
    if (k < kept.length && (i >= ids.length || cursor.ids[kept[k]] < ids[i])) {
      outIds[o] = cursor.ids[kept[k]];
      outSent[o] = cursor.sentAt[kept[k++]];
    } else {
      outIds[o] = ids[i];
      outSent[o] = sentAt[i++];
    }
  }
  return { ids: outIds, sentAt: outSent };
}

/** A decision as CrowdSec's LAPI writes it: every field present and non-null. */
export function decisionJson(id: number, v6Value: string | null, secondsLeft: number, untilMs: number, scenario: string): string {
  const w = new ChunkWriter(512);
  decisionWriter(secondsLeft, untilMs)(w, id, v6Value, scenario);
  return utf8.decode(w.take());
}

/** Decisions that share a duration and an end as a JSON array, written with one writer. */
export function decisionsJson(decisions: readonly { id: number; v6Value: string | null; scenario: string }[], secondsLeft: number, untilMs: number): string {
  const w = new ChunkWriter(512);
  const write = decisionWriter(secondsLeft, untilMs);
  w.byte(0x5b); // "["
  decisions.forEach((d, i) => {
    if (i > 0) w.byte(0x2c); // ","
    write(w, d.id, d.v6Value, d.scenario);
  });
  w.byte(0x5d); // "]"
  return utf8.decode(w.take());
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
 * The body `{"new":[...],"deleted":[...]}` as a stream of chunks; `onWhole` runs when the consumer asked for more
 * after the last chunk (the answer went out whole), never when it gave up before.
 */
export function streamPull(plan: PullPlan, nowMs: number, durationSeconds: number, scenario: (id: number) => string, onWhole: () => void): ReadableStream<Uint8Array> {
  const sections: [string, Float64Array][] = [
    ["new", plan.added],
    ["deleted", plan.deleted],
  ];
  let section = 0;
  let at = 0;
  let opened = false;
  let finished = false;
  let firstInSection = true;
  let headerWritten = false;
  const values = plan.next.v6Values;
  const write = decisionWriter(durationSeconds, nowMs + durationSeconds * 1000);
  const w = new ChunkWriter(CHUNK_BYTES);
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (finished) {
        onWhole();
        controller.close();
        return;
      }
      if (!opened) w.byte(0x7b); // "{"
      opened = true;
      while (section < sections.length && !w.full) {
        const [name, ids] = sections[section];
        if (!headerWritten) {
          w.ascii(`${section === 0 ? "" : "],"}"${name}":[`);
          headerWritten = true;
        }
        for (; at < ids.length && !w.full; at++) {
          const id = ids[at];
          const v6Value = isV6DecisionId(id) ? values[id] : null;
          if (v6Value === undefined) continue; // an IPv6 id whose value is not known: nothing to send
          if (!firstInSection) w.byte(0x2c); // ","
          write(w, id, v6Value, name === "new" ? scenario(id) : "abuse-intel/delisted");
          firstInSection = false;
        }
        if (at >= ids.length) {
          section++;
          at = 0;
          firstInSection = true;
          headerWritten = false;
        }
      }
      if (section >= sections.length) {
        w.ascii("]}");
        finished = true;
      }
      controller.enqueue(w.take());
    },
  });
}
