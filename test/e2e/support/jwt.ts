// Forged and tampered tokens for end-to-end tests of credential checks: a real token with its claims
// rewritten but its signature kept, and tokens signed with a secret the server does not know.

import { createHmac } from "node:crypto";

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

export function decodeClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString("utf8"));
}

/** The token with `changes` merged into its claims and the original header and signature kept. */
export function withClaims(token: string, changes: Record<string, unknown>): string {
  const [header, , signature] = token.split(".");
  return `${header}.${encode({ ...decodeClaims(token), ...changes })}.${signature}`;
}

/** An HS256 token over `claims` signed with `secret`. */
export function signHs256(claims: Record<string, unknown>, secret: string): string {
  const unsigned = `${encode({ alg: "HS256", typ: "JWT" })}.${encode(claims)}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

/** An unsigned token (`alg: none`), which a careless verifier accepts. */
export function unsigned(claims: Record<string, unknown>): string {
  return `${encode({ alg: "none", typ: "JWT" })}.${encode(claims)}.`;
}
