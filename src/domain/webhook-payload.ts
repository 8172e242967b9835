// The webhook wire format (contract section 7): the event kinds, the exact body bytes, their signature, the
// retry schedule, and what a subscription's url, events and secret may be. Pure: no I/O, no clock.

import { createHmac, timingSafeEqual } from "node:crypto";
import { type Category, lowercaseCategory, type LowercaseCategory } from "./categories";
import { isoTime } from "./clock";

export const EVENT_KINDS = ["ip.reported", "ip.verified", "threat.detected", "ping"] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export function isEventKind(value: unknown): value is EventKind {
  return typeof value === "string" && (EVENT_KINDS as readonly string[]).includes(value);
}

export type ThreatKind = "subnet_burst" | "category_campaign";

/** What the report service (ip.reported) and the verification job (ip.verified) know about the event. */
export interface ReportEventInput {
  /** The normalized address. */
  ip: string;
  category: Category;
  /** The address's abuse_confidence (0..100) at that moment, the report included. */
  confidence: number;
  reporterId: number;
  reportId: number;
}

/** What threat detection knows about a `threat.detected` event. */
export interface ThreatEventInput {
  /** The pattern's network as a CIDR (`203.0.113.0/24`). */
  cidr: string;
  /** The campaign's category, or null for a subnet burst of mixed categories. */
  category: Category | null;
  /** The highest abuse_confidence among the pattern's addresses, 0..100. */
  confidence: number;
  kind: ThreatKind;
  threatId: number;
  ipCount: number;
  /** The autonomous system of a category campaign. */
  asn?: number | null;
}

export interface PingEventInput {
  webhookId: number;
}

export type EventInput<E extends EventKind> = E extends "ip.reported" | "ip.verified"
  ? ReportEventInput
  : E extends "threat.detected"
    ? ThreatEventInput
    : PingEventInput;

/**
 * The `data` object on the wire. The first four keys are always present (null where they mean nothing, as for
 * a ping); ids are decimal strings like everywhere else in the API.
 */
export interface EventData {
  ip: string | null;
  category: LowercaseCategory | null;
  confidence: number | null;
  reporter_id: string | null;
  [extra: string]: unknown;
}

function checkConfidence(confidence: number): number {
  if (!Number.isInteger(confidence) || confidence < 0 || confidence > 100) {
    throw new RangeError(`confidence must be an integer 0..100, got ${confidence}`);
  }
  return confidence;
}

/** The wire `data` of an event from what its producer knows. Key order is fixed: it is part of the signed bytes. */
export function eventData<E extends EventKind>(event: E, input: EventInput<E>): EventData {
  switch (event) {
    case "ip.reported":
    case "ip.verified": {
      const r = input as ReportEventInput;
      return {
        ip: r.ip,
        category: lowercaseCategory(r.category),
        confidence: checkConfidence(r.confidence),
        reporter_id: String(r.reporterId),
        reportId: String(r.reportId),
      };
    }
    case "threat.detected": {
      const t = input as ThreatEventInput;
      const data: EventData = {
        ip: t.cidr,
        category: t.category === null ? null : lowercaseCategory(t.category),
        confidence: checkConfidence(t.confidence),
        reporter_id: null,
        kind: t.kind,
        threatId: String(t.threatId),
        ipCount: t.ipCount,
      };
      if (t.asn !== undefined && t.asn !== null) data.asn = t.asn;
      return data;
    }
    case "ping": {
      const p = input as PingEventInput;
      return { ip: null, category: null, confidence: null, reporter_id: null, webhookId: String(p.webhookId) };
    }
    default:
      throw new RangeError(`unknown event kind ${String(event)}`);
  }
}

/**
 * The exact body bytes of a notification: `{"event","timestamp","data"}`. `dataJson` is the stored JSON of the
 * data object, spliced in as it is so the bytes never depend on a re-serialization.
 */
export function buildBody(event: EventKind, atMs: number, dataJson: string): string {
  return `{"event":${JSON.stringify(event)},"timestamp":${JSON.stringify(isoTime(atMs))},"data":${dataJson}}`;
}

/** `X-Webhook-Signature`: lowercase hex HMAC-SHA256 of the exact body bytes (UTF-8) with the subscription's secret. */
export function signBody(secret: string, body: string | Uint8Array): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

/** What a receiver does: recompute the signature and compare in constant time. */
export function signatureMatches(secret: string, body: string | Uint8Array, signature: string): boolean {
  const expected = Buffer.from(signBody(secret, body), "utf8");
  const given = Buffer.from(signature, "utf8");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Waits after the 1st..7th failed attempt; the 8th failure is final (contract section 7). */
export const RETRY_DELAYS_MS: readonly number[] = Object.freeze([
  10_000, // 10 s
  60_000, // 1 min
  300_000, // 5 min
  1_800_000, // 30 min
  7_200_000, // 2 h
  21_600_000, // 6 h
  43_200_000, // 12 h
]);
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** The wait before the next attempt after `attemptsMade` attempts all failed, or null when the delivery has failed. */
export function retryDelayAfter(attemptsMade: number): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1) throw new RangeError(`attemptsMade must be ≥ 1, got ${attemptsMade}`);
  return RETRY_DELAYS_MS[attemptsMade - 1] ?? null;
}

/** Any 2xx is success; redirects are not followed, so a 3xx is a failure like any other status. */
export const isSuccessStatus = (status: number): boolean => status >= 200 && status <= 299;

export const MAX_URL_LENGTH = 2048;

/** Why a subscription url is refused, or null when it is a usable http(s) url. */
export function webhookUrlProblem(input: unknown): string | null {
  if (typeof input !== "string" || input === "") return "must be an http or https URL";
  if (input.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  if (input !== input.trim() || /\s/.test(input)) return "must not contain whitespace";
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return "is not a valid URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must use http or https";
  if (url.hostname === "") return "must name a host";
  return null;
}

export const MIN_SECRET_LENGTH = 16;
export const MAX_SECRET_LENGTH = 256;

/** Why a caller-given secret is refused, or null. */
export function webhookSecretProblem(input: unknown): string | null {
  if (typeof input !== "string") return "must be a string";
  if (input.length < MIN_SECRET_LENGTH) return `must be at least ${MIN_SECRET_LENGTH} characters`;
  if (input.length > MAX_SECRET_LENGTH) return `must be at most ${MAX_SECRET_LENGTH} characters`;
  if (/[^\x21-\x7e]/.test(input)) return "must be printable ASCII without spaces";
  return null;
}

/** A subscription's event list: at least one known kind, duplicates dropped, order kept; or the problem. */
export function parseEventList(input: unknown): { events: EventKind[] } | { problem: string } {
  const allowed = EVENT_KINDS.join(", ");
  if (!Array.isArray(input) || input.length === 0) return { problem: `must be a non-empty list of: ${allowed}` };
  const events: EventKind[] = [];
  for (const item of input) {
    if (!isEventKind(item)) return { problem: `unknown event ${JSON.stringify(item)}; allowed values: ${allowed}` };
    if (!events.includes(item)) events.push(item);
  }
  return { events };
}
