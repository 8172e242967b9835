// GET /v1/snapshots/latest (contract section 16): the primary's newest snapshot for its edges, to an admin's API
// key (or token). A strong ETag (the content hash), so an unchanged snapshot costs one 304; a range-capable body,
// so a broken download resumes. Counted against the daily budget like every /v1 request (contract 4): an edge
// pulling every minute makes 1,440 a day, so its key's account wants a budget above that (the first administrator
// is enterprise: unlimited).

import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import type { Services } from "../../services/services";
import { LatestSnapshots } from "../../services/snapshots/latest";
import { authenticate, countRequest } from "../auth";

/** One `bytes=a-b`, `bytes=a-` or `bytes=-n` range of a `size`-byte body, or null when it is none of those. */
export function parseRange(header: string, size: number): { start: number; end: number } | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null || (m[1] === "" && m[2] === "")) return null;
  let start: number;
  let end: number;
  if (m[1] === "") {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  return start <= end && start < size ? { start, end } : null;
}

export function snapshotRoutes(services: Services) {
  const snapshots = new LatestSnapshots(services.config.dataDir, services.config.signKey !== null);
  /** `counted` (Elysia's `set.headers`) gets the rate-limit headers, which Elysia also puts on an error answer. */
  const answer = (request: Request, withBody: boolean, counted: Record<string, string | number>): Response => {
    const principal = authenticate(services, request, "key");
    if (principal.role !== "admin") throw new AppError("forbidden", "The latest snapshot is for administrators' keys (an edge's --follow-key)");
    countRequest(services, principal, counted);
    const latest = services.config.snapshot === null ? snapshots.latest() : null;
    if (latest === null) throw new AppError("not_found", "No snapshot yet: the snapshot job writes one (see GET /v1/admin/jobs), signed with serve --sign-key");
    const headers: Record<string, string> = {
      ...(counted as Record<string, string>),
      etag: latest.etag,
      "accept-ranges": "bytes",
      "content-type": "application/vnd.sqlite3",
      "x-snapshot-created-at": latest.createdAt,
      "x-snapshot-signed": String(latest.signed),
    };
    if (request.headers.get("if-none-match") === latest.etag) return new Response(null, { status: 304, headers });
    const file = Bun.file(latest.path);
    const rangeHeader = request.headers.get("range");
    const ifRange = request.headers.get("if-range");
    if (rangeHeader !== null && (ifRange === null || ifRange === latest.etag)) {
      const range = parseRange(rangeHeader, latest.bytes);
      if (range === null) return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${latest.bytes}` } });
      headers["content-range"] = `bytes ${range.start}-${range.end}/${latest.bytes}`;
      headers["content-length"] = String(range.end - range.start + 1);
      return new Response(withBody ? file.slice(range.start, range.end + 1) : null, { status: 206, headers });
    }
    headers["content-length"] = String(latest.bytes);
    return new Response(withBody ? file : null, { status: 200, headers });
  };
  return new Elysia()
    .get("/v1/snapshots/latest", ({ request, set }) => answer(request, true, set.headers as Record<string, string | number>))
    .head("/v1/snapshots/latest", ({ request, set }) => answer(request, false, set.headers as Record<string, string | number>));
}
