// The OpenAPI operations of the routes in jobs.ts (GET /v1/openapi.json), beside the routes they document.

import { type Operation, ref, str, array, envelope, json, operation, pathId } from "../openapi/schema";

export const jobsPaths: Record<string, Record<string, Operation>> = {
  "/v1/admin/jobs": {
    get: operation("listJobs", { tag: "Administration", access: "admin", summary: "The scheduled jobs and their last runs", ok: { 200: json("Jobs.", envelope(array(ref("Job")))) } }),
  },
  "/v1/admin/jobs/{name}/run": {
    post: operation("runJob", {
      tag: "Administration",
      access: "admin",
      summary: "Run a job now",
      description: "Answers once the run has finished, with the job's status (a failed run shows `lastError`).",
      params: [pathId("name", "The job.", str(undefined, { examples: ["rescore", "verify", "detect-threats", "expire", "snapshot"] }))],
      ok: { 200: json("The job after the run.", envelope(ref("Job"))) },
      errors: [404, 409],
    }),
  },
};
