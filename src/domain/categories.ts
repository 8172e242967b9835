// The abuse categories (contract 5.3): parsing of user input, the bitmask the index stores, the lowercase webhook
// form, and the mapping to and from AbuseIPDB's category numbers (for /api/v2 and the bulk-CSV import).
//
// AbuseIPDB number → our category. Numbers with a category of their own map to it; the others map to the
// nearest one of ours:
//
// | #  | AbuseIPDB name   | ours          | why, when not the same thing                                        |
// |----|------------------|---------------|---------------------------------------------------------------------|
// | 1  | DNS Compromise   | HACKING       | altering a DNS server's records means having broken into it         |
// | 2  | DNS Poisoning    | SPOOFING      | cache poisoning forges answers: a spoofing attack                   |
// | 3  | Fraud Orders     | FRAUD         |                                                                     |
// | 4  | DDoS Attack      | DDOS          |                                                                     |
// | 5  | FTP Brute-Force  | BRUTE_FORCE   | brute force against one protocol                                    |
// | 6  | Ping of Death    | DDOS          | a denial-of-service packet                                          |
// | 7  | Phishing         | PHISHING      |                                                                     |
// | 8  | Fraud VoIP       | FRAUD         | telephony fraud                                                     |
// | 9  | Open Proxy       | OPEN_PROXY    |                                                                     |
// | 10 | Web Spam         | SPAM          | spam by another channel                                             |
// | 11 | Email Spam       | SPAM          | SPAM's primary number                                               |
// | 12 | Blog Spam        | SPAM          | spam by another channel                                             |
// | 13 | VPN IP           | OPEN_PROXY    | an anonymising relay, as an open proxy is                           |
// | 14 | Port Scan        | PORT_SCAN     |                                                                     |
// | 15 | Hacking          | HACKING       |                                                                     |
// | 16 | SQL Injection    | SQL_INJECTION |                                                                     |
// | 17 | Spoofing         | SPOOFING      |                                                                     |
// | 18 | Brute-Force      | BRUTE_FORCE   |                                                                     |
// | 19 | Bad Web Bot      | BAD_BOT       |                                                                     |
// | 20 | Exploited Host   | EXPLOIT       |                                                                     |
// | 21 | Web App Attack   | WEB_ATTACK    |                                                                     |
// | 22 | SSH              | SSH           |                                                                     |
// | 23 | IoT Targeted     | IOT           |                                                                     |
//
// Ours → AbuseIPDB: every category but MALWARE has a number of its own (the primary one above; `null` for
// MALWARE in `GET /v1/categories`). Where a number is needed whatever the category (reports served through
// /api/v2), MALWARE goes out as 20 Exploited Host, AbuseIPDB's category for malware-infected hosts.

import { validationFailed } from "./errors";

/** The categories in the contract's order; a category's position is its bit in a categories bitmask. */
export const CATEGORIES = [
  "SPAM",
  "BRUTE_FORCE",
  "PORT_SCAN",
  "PHISHING",
  "MALWARE",
  "DDOS",
  "SQL_INJECTION",
  "EXPLOIT",
  "WEB_ATTACK",
  "BAD_BOT",
  "OPEN_PROXY",
  "FRAUD",
  "SSH",
  "IOT",
  "SPOOFING",
  "HACKING",
] as const;

export type Category = (typeof CATEGORIES)[number];
/** The webhook payload's form of a category (`brute_force`). */
export type LowercaseCategory = Lowercase<Category>;

export interface CategoryInfo {
  readonly name: Category;
  readonly description: string;
  /** AbuseIPDB's own number for this category, or null when AbuseIPDB has none. */
  readonly abuseIpdbNumber: number | null;
  /** Position in CATEGORIES, and the bit in a categories bitmask. */
  readonly bit: number;
}

const DESCRIPTIONS: Record<Category, { description: string; abuseIpdbNumber: number | null }> = {
  SPAM: { description: "Sends unsolicited bulk messages: email, web-form, comment or blog spam", abuseIpdbNumber: 11 },
  BRUTE_FORCE: { description: "Guesses credentials by repeated login attempts against any service", abuseIpdbNumber: 18 },
  PORT_SCAN: { description: "Probes hosts for open ports and running services", abuseIpdbNumber: 14 },
  PHISHING: { description: "Hosts or sends phishing: sites or messages that impersonate others to steal credentials", abuseIpdbNumber: 7 },
  MALWARE: { description: "Distributes or hosts malware, or acts as a command-and-control server", abuseIpdbNumber: null },
  DDOS: { description: "Takes part in denial-of-service attacks", abuseIpdbNumber: 4 },
  SQL_INJECTION: { description: "Attempts SQL injection against web applications", abuseIpdbNumber: 16 },
  EXPLOIT: { description: "Exploits vulnerabilities, or is an exploited host used to attack others", abuseIpdbNumber: 20 },
  WEB_ATTACK: { description: "Attacks web applications: path traversal, file inclusion, XSS, scanning for vulnerable paths", abuseIpdbNumber: 21 },
  BAD_BOT: { description: "A web bot that ignores robots.txt, scrapes, or floods sites with requests", abuseIpdbNumber: 19 },
  OPEN_PROXY: { description: "An open proxy, open relay or anonymising VPN exit used to hide the origin of abuse", abuseIpdbNumber: 9 },
  FRAUD: { description: "Commits fraud: fraudulent orders, payment or VoIP fraud", abuseIpdbNumber: 3 },
  SSH: { description: "Abuses SSH: login attempts, scanning or attacks on SSH servers", abuseIpdbNumber: 22 },
  IOT: { description: "Targets IoT devices: cameras, routers, Telnet and other embedded services", abuseIpdbNumber: 23 },
  SPOOFING: { description: "Forges sender identity: spoofed addresses, email spoofing, DNS cache poisoning", abuseIpdbNumber: 17 },
  HACKING: { description: "Attempts to break into systems by other means than those above", abuseIpdbNumber: 15 },
};

/** Every category with its description, AbuseIPDB number and bit, in the contract's order. */
export const CATEGORY_INFO: readonly CategoryInfo[] = CATEGORIES.map((name, bit) => ({ name, bit, ...DESCRIPTIONS[name] }));

const BIT_OF = new Map<Category, number>(CATEGORIES.map((c, i) => [c, i]));

/** Bitmask with every category set. */
export const ALL_CATEGORIES_MASK = (1 << CATEGORIES.length) - 1;

/** The category's position in CATEGORIES (its bit, and its code in typed arrays). */
export function categoryBit(category: Category): number {
  return BIT_OF.get(category)!;
}

/** The category at a position in CATEGORIES (a bit, or a code from a typed array). */
export function categoryAt(bit: number): Category {
  const category = CATEGORIES[bit];
  if (category === undefined) throw new RangeError(`no category at position ${bit}`);
  return category;
}

export function isCategory(value: unknown): value is Category {
  return typeof value === "string" && BIT_OF.has(value as Category);
}

/** The bitmask of a set of categories (bit i = CATEGORIES[i]). */
export function maskOf(categories: Iterable<Category>): number {
  let mask = 0;
  for (const c of categories) mask |= 1 << categoryBit(c);
  return mask;
}

/** The categories of a bitmask, in the contract's order. Bits beyond the 16 categories are ignored. */
export function categoriesFromMask(mask: number): Category[] {
  const out: Category[] = [];
  for (let bit = 0; bit < CATEGORIES.length; bit++) if (mask & (1 << bit)) out.push(CATEGORIES[bit]);
  return out;
}

/** Whether the mask holds any of the categories in `filterMask` (blocklist `category=a,b` semantics). */
export function maskIntersects(mask: number, filterMask: number): boolean {
  return (mask & filterMask) !== 0;
}

export function lowercaseCategory(category: Category): LowercaseCategory {
  return category.toLowerCase() as LowercaseCategory;
}

const ALLOWED = CATEGORIES.join(", ");

/**
 * Reads a category the way users write it: case-insensitive, `-` or a space for `_`, surrounding whitespace
 * ignored. Null when it is not a category.
 */
export function tryParseCategory(input: unknown): Category | null {
  if (typeof input !== "string") return null;
  const key = input.trim().toUpperCase().replace(/[- ]/g, "_");
  return BIT_OF.has(key as Category) ? (key as Category) : null;
}

/** The message for a value that is not a category; it names the allowed values (contract 5.3). */
export function unknownCategoryMessage(input: unknown): string {
  const shown = typeof input === "string" ? `"${input}"` : typeof input === "undefined" ? "nothing" : JSON.stringify(input);
  return `unknown category ${shown}; allowed values: ${ALLOWED}`;
}

/** Parses one category or throws AppError validation_failed (400) naming the allowed values. */
export function parseCategory(input: unknown, field = "category"): Category {
  const category = tryParseCategory(input);
  if (category === null) {
    const message = unknownCategoryMessage(input);
    throw validationFailed([{ field, message }], `Invalid ${field}: ${message}`);
  }
  return category;
}

/**
 * Parses a comma-separated list (`ssh,brute-force`): items trimmed, empty items skipped, duplicates dropped,
 * first-seen order kept. Every unknown item is named in one validation_failed error; so is an empty list.
 */
export function parseCategoryList(input: string, field = "category"): Category[] {
  const out: Category[] = [];
  const unknown: string[] = [];
  for (const raw of input.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const category = tryParseCategory(item);
    if (category === null) unknown.push(`"${item}"`);
    else if (!out.includes(category)) out.push(category);
  }
  if (unknown.length > 0) {
    const message = `unknown ${unknown.length === 1 ? "category" : "categories"} ${unknown.join(", ")}; allowed values: ${ALLOWED}`;
    throw validationFailed([{ field, message }], `Invalid ${field}: ${message}`);
  }
  if (out.length === 0) {
    const message = `at least one category is needed; allowed values: ${ALLOWED}`;
    throw validationFailed([{ field, message }], `Invalid ${field}: ${message}`);
  }
  return out;
}

/** AbuseIPDB's categories, 1..23, with their names and the category of ours each maps to (table above). */
export const ABUSEIPDB_CATEGORIES: readonly { readonly number: number; readonly name: string; readonly category: Category }[] = [
  { number: 1, name: "DNS Compromise", category: "HACKING" },
  { number: 2, name: "DNS Poisoning", category: "SPOOFING" },
  { number: 3, name: "Fraud Orders", category: "FRAUD" },
  { number: 4, name: "DDoS Attack", category: "DDOS" },
  { number: 5, name: "FTP Brute-Force", category: "BRUTE_FORCE" },
  { number: 6, name: "Ping of Death", category: "DDOS" },
  { number: 7, name: "Phishing", category: "PHISHING" },
  { number: 8, name: "Fraud VoIP", category: "FRAUD" },
  { number: 9, name: "Open Proxy", category: "OPEN_PROXY" },
  { number: 10, name: "Web Spam", category: "SPAM" },
  { number: 11, name: "Email Spam", category: "SPAM" },
  { number: 12, name: "Blog Spam", category: "SPAM" },
  { number: 13, name: "VPN IP", category: "OPEN_PROXY" },
  { number: 14, name: "Port Scan", category: "PORT_SCAN" },
  { number: 15, name: "Hacking", category: "HACKING" },
  { number: 16, name: "SQL Injection", category: "SQL_INJECTION" },
  { number: 17, name: "Spoofing", category: "SPOOFING" },
  { number: 18, name: "Brute-Force", category: "BRUTE_FORCE" },
  { number: 19, name: "Bad Web Bot", category: "BAD_BOT" },
  { number: 20, name: "Exploited Host", category: "EXPLOIT" },
  { number: 21, name: "Web App Attack", category: "WEB_ATTACK" },
  { number: 22, name: "SSH", category: "SSH" },
  { number: 23, name: "IoT Targeted", category: "IOT" },
];

/** Our category for an AbuseIPDB category number, or null when the number is not one of 1..23. */
export function categoryFromAbuseIpdb(abuseIpdbNumber: number): Category | null {
  if (!Number.isInteger(abuseIpdbNumber) || abuseIpdbNumber < 1 || abuseIpdbNumber > ABUSEIPDB_CATEGORIES.length) return null;
  return ABUSEIPDB_CATEGORIES[abuseIpdbNumber - 1].category;
}

/** Every AbuseIPDB number that maps to a category (`abuseIpdbCategories` of GET /v1/categories): SPAM gives 10, 11, 12. */
export function abuseIpdbNumbersMappedTo(category: Category): number[] {
  return ABUSEIPDB_CATEGORIES.filter((a) => a.category === category).map((a) => a.number);
}

/** AbuseIPDB's own number for a category (GET /v1/categories), null when it has none (MALWARE). */
export function abuseIpdbNumberOf(category: Category): number | null {
  return DESCRIPTIONS[category].abuseIpdbNumber;
}

/** A number for every category, for output that must carry one (/api/v2): MALWARE goes out as 20 Exploited Host. */
export function nearestAbuseIpdbNumber(category: Category): number {
  return DESCRIPTIONS[category].abuseIpdbNumber ?? 20;
}

/**
 * Reads one item of an imported or /api/v2 category field: an AbuseIPDB number (`18`) or one of our names
 * (`brute-force`). Null when it is neither.
 */
export function tryParseCategoryOrAbuseIpdbNumber(input: string): Category | null {
  const item = input.trim();
  if (/^[0-9]{1,3}$/.test(item)) return categoryFromAbuseIpdb(Number(item));
  return tryParseCategory(item);
}
