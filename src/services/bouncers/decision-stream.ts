// One pull of the decisions stream (contract 14): what to send a bouncer given what it was last sent whole (its
// cursor), and the body, rendered in chunks so a million decisions start at once and never sit in memory as one
// string. The cursor that the caller commits once the body was sent whole comes with the plan.

import { goDuration, isV6DecisionId, needsRefresh, v4DecisionOf } from "../../domain/decisions";
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
export function decisionJson(id: number, value: string, scope: "Ip" | "Range", secondsLeft: number, untilMs: number, scenario: string): string {
  return decisionWriter(secondsLeft, untilMs)(id, value, scope, scenario);
}

/** Writes decisions that share a duration and an end (those of one answer), with those parts made once. */
export function decisionWriter(secondsLeft: number, untilMs: number): (id: number, value: string, scope: "Ip" | "Range", scenario: string) => string {
  const tail = `","duration":"${goDuration(secondsLeft)}","until":"${new Date(untilMs).toISOString().slice(0, 19)}Z","scenario":"`;
  return (id, value, scope, scenario) => {
    const hex = id.toString(16).padStart(20, "0");
    return `{"id":${id},"uuid":"ab5e1ce0-${hex.slice(0, 4)}-4${hex.slice(4, 7)}-8${hex.slice(7, 10)}-${hex.slice(10, 20)}00","origin":"abuse-intel","type":"ban","scope":"${scope}","value":"${value}${tail}${scenario}"}`;
  };
}

/** The value and scope of a decision id, given the IPv6 values known for it. */
function valueOf(id: number, v6Values: Record<string, string>): { value: string; scope: "Ip" | "Range" } | null {
  if (!isV6DecisionId(id)) return v4DecisionOf(id);
  const value = v6Values[id];
  return value === undefined ? null : { value, scope: value.includes("/") ? "Range" : "Ip" };
}

const DECISIONS_PER_CHUNK = 2048;
const encoder = new TextEncoder();

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
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (finished) {
        onWhole();
        controller.close();
        return;
      }
      let text = opened ? "" : "{";
      opened = true;
      let written = 0;
      while (section < sections.length && written < DECISIONS_PER_CHUNK) {
        const [name, ids] = sections[section];
        if (!headerWritten) {
          text += `${section === 0 ? "" : "],"}"${name}":[`;
          headerWritten = true;
        }
        for (; at < ids.length && written < DECISIONS_PER_CHUNK; at++, written++) {
          const id = ids[at];
          const v = valueOf(id, values);
          if (v === null) continue;
          text += `${firstInSection ? "" : ","}${write(id, v.value, v.scope, name === "new" ? scenario(id) : "abuse-intel/delisted")}`;
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
        text += "]}";
        finished = true;
      }
      controller.enqueue(encoder.encode(text));
    },
  });
}
