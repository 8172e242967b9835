// The keyset cursor of GET /v1/ip/recent (`pagination.next`, sent back as `cursor`): the last row's report time and
// address, so the next page starts right after it in the list's order (newest report first, then by address)
// however deep it is, where `offset` skips the rows before it one by one.

import { type FieldError, validationFailed } from "./errors";

export interface RecentCursor {
  /** The row's last report time (ms), or null for a row with none (such rows come last). */
  readonly lastSeenMs: number | null;
  readonly ip: string;
}

export function encodeRecentCursor(cursor: RecentCursor): string {
  return Buffer.from(`${cursor.lastSeenMs ?? "n"}|${cursor.ip}`, "utf8").toString("base64url");
}

/** The cursor a `cursor` parameter holds; throws validation_failed naming `cursor` when it is not one. */
export function parseRecentCursor(raw: unknown): RecentCursor {
  const bad = (): never => {
    const problem: FieldError = { field: "cursor", message: "must be a pagination.next value of an earlier page" };
    throw validationFailed([problem], "Invalid query: cursor must be a pagination.next value of an earlier page");
  };
  if (typeof raw !== "string" || !/^[A-Za-z0-9_-]{1,200}$/.test(raw)) return bad();
  const text = Buffer.from(raw, "base64url").toString("utf8");
  const match = /^(n|\d{1,16})\|([0-9a-f.:]{2,45})$/.exec(text);
  if (match === null) return bad();
  return { lastSeenMs: match[1] === "n" ? null : Number(match[1]), ip: match[2]! };
}
