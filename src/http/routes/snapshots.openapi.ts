// The OpenAPI operations of the routes in snapshots.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, operation } from "../openapi/schema";

const latest = (method: "get" | "head") =>
  operation(method === "get" ? "latestSnapshot" : "latestSnapshotHead", {
    tag: "Administration",
    access: "key",
    summary: method === "get" ? "The primary's newest snapshot, for its edges" : "The newest snapshot's headers",
    description:
      "An administrator's API key (or token); other accounts get 403. The body is the SQLite snapshot file the snapshot job wrote, signed when the server runs with `--sign-key`. " +
      "A strong `ETag` (the content hash): `If-None-Match` with it answers 304. `Range: bytes=a-b` (with `If-Range`) answers 206 with that part, so a broken download resumes. Not counted against the daily budget.",
    ok: {
      200: { description: "The snapshot file.", content: { "application/vnd.sqlite3": { schema: { type: "string", format: "binary" } } } },
      206: { description: "A part of it.", content: { "application/vnd.sqlite3": { schema: { type: "string", format: "binary" } } } },
      304: { description: "Unchanged since the ETag sent." },
    },
    errors: [403, 404],
  });

export const snapshotsPaths: Record<string, Record<string, Operation>> = {
  "/v1/snapshots/latest": { get: latest("get"), head: latest("head") },
};
