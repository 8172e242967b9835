// Who is making a request, once their credential has been checked (contract section 3).

export type Tier = "free" | "pro" | "enterprise";
export type Role = "user" | "admin";

export interface Principal {
  userId: number;
  email: string;
  role: Role;
  tier: Tier;
  /** The account's daily budget in force (dailyLimit override, else the tier's); null means unlimited. */
  dailyBudget: number | null;
  /** How the request authenticated: a user JWT, an API key, or a key given to a read-only snapshot server. */
  via: "jwt" | "api_key" | "static_key";
  /** The API key's row id, when `via` is "api_key". */
  apiKeyId: number | null;
  /**
   * Which configured key, when `via` is "static_key": a stable name (a prefix of the key's SHA-256), so that what
   * a server keeps per key (bouncers' cursors) is kept per key there too.
   */
  staticKey?: string;
}

/**
 * The account that holds the bouncers' keys (`abuse-intel bouncer add`). Its keys pull decisions (the CrowdSec
 * routes) and nothing else: they sit in firewalls' configuration files, and one taken from there must not report
 * addresses or use the API at an enterprise account's unlimited budget.
 */
export const BOUNCER_ACCOUNT = "bouncers@abuse-intel.local";

/** What a route requires: any credential, a user JWT, or a user JWT of an admin. */
export type AuthLevel = "key" | "user" | "admin";
