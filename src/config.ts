// Configuration of every command: flags beat ABUSE_INTEL_* environment variables, which beat the defaults.
// Parsed and validated once, at the edge; the rest of the program receives a typed Config.

import { AppError } from "./domain/errors";
import { DEFAULT_WINDOW_REPORTS } from "./domain/threat-window";
import { tryParseCidr } from "./domain/ip";
import { RISK_LEVELS, type RiskLevel, tryParseRiskLevel } from "./domain/risk";
import { wireName } from "./domain/dnsbl/names";
import { MAX_SCORING_DAYS, resolveScoringParameters, type ScoringParameterOverrides, type ScoringParameters } from "./domain/scoring";

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** HS256 secret; null means "use or create <data-dir>/jwt-secret". */
  jwtSecret: string | null;
  jwtTtlSeconds: number;
  adminEmail: string | null;
  adminPassword: string | null;
  geoMmdb: string | null;
  /** `serve --snapshot FILE`: read-only serving from a snapshot. */
  snapshot: string | null;
  /** API keys accepted by a read-only snapshot server. */
  apiKeys: string[];
  /** Report retention in days (contract 5.5). */
  retentionDays: number;
  /** Scoring half-life in days (contract 5.7). */
  halfLifeDays: number;
  /** Further scoring overrides (weights, caps, scale, risk thresholds), as JSON (contract 5.7). */
  scoring: ScoringParameterOverrides;
  /** Croner patterns by job name; unset ones use the job's default. */
  schedules: Record<string, string>;
  /** `full` (default: survives power loss) or `normal` (survives a process crash). */
  syncMode: "full" | "normal";
  /** Log one line per request to stderr. */
  accessLog: boolean;
  /** When set, GET /metrics requires `Authorization: Bearer <metricsToken>`; null leaves it open. */
  metricsToken: string | null;
  /** A primary's private key (from `snapshot keygen`): the snapshot job signs with it (contract 16). */
  signKey: string | null;
  /** An edge: the primary's URL to follow, the key it pulls with, the public key snapshots must verify with. */
  follow: string | null;
  followKey: string | null;
  pubkey: string | null;
  /** Seconds between an edge's pulls. */
  followEverySeconds: number;
  /** Reports the detect-threats job keeps in memory at most (its window; see ThreatService). */
  threatWindowReports: number;
  /** The DNS blocklist (contract 17): its port (null: off), address (null: --host), zone, level, TTL, allowed sources. */
  dnsPort: number | null;
  dnsHost: string | null;
  dnsZone: string;
  dnsRiskLevel: RiskLevel;
  dnsTtl: number;
  /** Normalized CIDRs allowed to ask; null: any. */
  dnsAllow: string[] | null;
  /** An edge: the primary's API key its queued reports are forwarded with (contract 18); null: writes refused. */
  forwardKey: string | null;
  /** An edge: reports its forward queue holds at most (contract 18). */
  forwardQueueMax: number;
  /** The duplicate rule's window in ms (contract 18; default 15 minutes; 0 turns the rule off). */
  duplicateWindowMs: number;
}

interface OptionSpec {
  key: keyof Config;
  flag: string;
  env: string;
  help: string;
  parse: (raw: string, name: string) => unknown;
  repeatable?: boolean;
  boolean?: boolean;
}

const asString = (raw: string) => raw;
/** An address to listen on: never empty (Bun took "" as every interface and named it localhost). */
const asHost = (raw: string, name: string) => {
  if (raw.trim() === "") throw configError(`${name} must be an address to listen on (0.0.0.0, ::, 127.0.0.1, a name), got ""`);
  return raw.trim();
};
/** A whole number from `min` to `max`; `what` describes it in the error ("a port number 0-65535"). */
const asIntegerIn = (min: number, max: number, what: string) => (raw: string, name: string) => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw configError(`${name} must be ${what}, got "${raw}"`);
  return n;
};
const asPort = asIntegerIn(0, 65535, "a port number 0-65535");
/** A number greater than 0 and at most `max` (a bound far past any use that keeps the times computed finite). */
const asPositiveUpTo = (max: number) => (raw: string, name: string) => {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > max) throw configError(`${name} must be a number greater than 0 and at most ${max}, got "${raw}"`);
  return n;
};
/** A year of seconds: a longer-lived credential is an API key's job. */
const asTokenLifetime = asPositiveUpTo(366 * 86_400);
const asScoringDays = asPositiveUpTo(MAX_SCORING_DAYS);
export const asUrl = (raw: string, name: string) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw configError(`${name} must be an http or https URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw configError(`${name} must be an http or https URL, got "${raw}"`);
  return url.toString().replace(/\/$/, "");
};
/** The longest interval a timer takes (setInterval's delay is a signed 32-bit count of ms): 24 days. */
const MAX_INTERVAL_SECONDS = 24 * 86_400;
export const asSeconds = (raw: string, name: string) => {
  const match = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(raw.trim());
  const n = match ? Number(match[1]) * (match[2] === "m" ? 60 : match[2] === "h" ? 3600 : 1) : Number.NaN;
  if (!Number.isFinite(n) || n < 1 || n > MAX_INTERVAL_SECONDS) {
    throw configError(`${name} must be a duration from 1 s to 24 days (60, 60s, 5m, 576h), got "${raw}"`);
  }
  return n;
};
/** A duration of 0 (off) up to a day: `900`, `900s`, `15m`, `1h`; in ms. */
const asWindowMs = (raw: string, name: string) => {
  const match = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(raw.trim());
  const n = match ? Number(match[1]) * (match[2] === "m" ? 60 : match[2] === "h" ? 3600 : 1) : Number.NaN;
  if (!Number.isFinite(n) || n > 86_400) throw configError(`${name} must be a duration from 0 (off) to 24h (900, 900s, 15m), got "${raw}"`);
  return Math.round(n * 1000);
};
const asReportCount = asIntegerIn(1000, 100_000_000, "a whole number of reports from 1000 to 100000000");
const asSyncMode = (raw: string, name: string) => {
  const v = raw.toLowerCase();
  if (v !== "full" && v !== "normal") throw configError(`${name} must be "full" or "normal", got "${raw}"`);
  return v;
};
const asScoring = (raw: string, name: string) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw configError(`${name} must be a JSON object, e.g. {"perReporterCap":2,"riskThresholds":{"low":85}}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw configError(`${name} must be a JSON object`);
  try {
    resolveScoringParameters(parsed as ScoringParameterOverrides);
  } catch (error) {
    throw configError(`${name}: ${(error as Error).message}`);
  }
  return parsed;
};
/**
 * An on/off value, from a switch's `--flag=value` or an environment variable: true/false, 1/0 or yes/no. Anything
 * else is refused: `no` used to read as on (ABUSE_INTEL_ACCESS_LOG=no logged, `--replace=no` replaced).
 */
export function booleanOf(raw: string, name: string): boolean {
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1" || v === "yes") return true;
  if (v === "false" || v === "0" || v === "no") return false;
  throw configError(`${name} is on or off: give it true or false (1/0, yes/no), got "${raw}"`);
}
const asBoolean = booleanOf;
/** A DNS zone name: letters, digits, `-` and `_` in labels of 1-63 bytes, at least one label, a dot at the end or not. */
const asZone = (raw: string, name: string) => {
  const zone = raw.trim().toLowerCase().replace(/\.$/, "");
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(zone)) throw configError(`${name} must be a domain name such as dnsbl.example.org, got "${raw}"`);
  try {
    wireName(zone);
  } catch (error) {
    throw configError(`${name}: ${(error as Error).message}`);
  }
  return zone;
};
const asRiskLevel = (raw: string, name: string) => {
  const level = tryParseRiskLevel(raw.trim());
  if (level === null) throw configError(`${name} must be one of ${RISK_LEVELS.join(", ")}, got "${raw}"`);
  return level;
};
/** A comma list of addresses or CIDRs, each normalized. */
const asCidrList = (raw: string, name: string) => {
  const items = raw.split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw configError(`${name} must be a comma-separated list of addresses or CIDRs, got "${raw}"`);
  return items.map((item) => {
    const cidr = tryParseCidr(item);
    if (typeof cidr === "string") throw configError(`${name}: "${item}" is not an address or CIDR (${cidr})`);
    return cidr.text;
  });
};

export const OPTIONS: OptionSpec[] = [
  { key: "host", flag: "--host", env: "ABUSE_INTEL_HOST", help: "address to listen on (default 0.0.0.0)", parse: asHost },
  { key: "port", flag: "--port", env: "ABUSE_INTEL_PORT", help: "port to listen on (default 8080)", parse: asPort },
  { key: "dataDir", flag: "--data-dir", env: "ABUSE_INTEL_DATA_DIR", help: "data directory (default ./data)", parse: asString },
  { key: "jwtSecret", flag: "--jwt-secret", env: "ABUSE_INTEL_JWT_SECRET", help: "JWT signing secret (default: generated into <data-dir>/jwt-secret)", parse: asString },
  { key: "jwtTtlSeconds", flag: "--jwt-ttl", env: "ABUSE_INTEL_JWT_TTL", help: "access token lifetime in seconds (default 3600, at most a year)", parse: asTokenLifetime },
  { key: "adminEmail", flag: "--admin-email", env: "ABUSE_INTEL_ADMIN_EMAIL", help: "email of the first admin (default admin@localhost)", parse: asString },
  { key: "adminPassword", flag: "--admin-password", env: "ABUSE_INTEL_ADMIN_PASSWORD", help: "password of the first admin (default: random, printed once)", parse: asString },
  { key: "geoMmdb", flag: "--geo-mmdb", env: "ABUSE_INTEL_GEO_MMDB", help: "MaxMind-format database adding cities (GeoLite2-City, DB-IP City Lite)", parse: asString },
  { key: "snapshot", flag: "--snapshot", env: "ABUSE_INTEL_SNAPSHOT", help: "serve read-only from this snapshot file", parse: asString },
  { key: "apiKeys", flag: "--api-key", env: "ABUSE_INTEL_API_KEYS", help: "API key accepted by a snapshot server (repeatable; env: comma-separated)", parse: asString, repeatable: true },
  { key: "retentionDays", flag: "--retention-days", env: "ABUSE_INTEL_RETENTION_DAYS", help: "days a report counts before it expires (default 365)", parse: asScoringDays },
  { key: "halfLifeDays", flag: "--half-life-days", env: "ABUSE_INTEL_HALF_LIFE_DAYS", help: "half-life of a report's weight in days (default 30)", parse: asScoringDays },
  { key: "scoring", flag: "--scoring", env: "ABUSE_INTEL_SCORING", help: "scoring overrides as JSON: severityWeights, verifiedMultiplier, perReporterCap, scale, riskThresholds", parse: asScoring },
  { key: "syncMode", flag: "--sync", env: "ABUSE_INTEL_SYNC", help: "SQLite synchronous mode: full (default) or normal", parse: asSyncMode },
  { key: "accessLog", flag: "--access-log", env: "ABUSE_INTEL_ACCESS_LOG", help: "log every request to stderr", parse: asBoolean, boolean: true },
  { key: "signKey", flag: "--sign-key", env: "ABUSE_INTEL_SIGN_KEY", help: "sign the snapshots the snapshot job makes with this private key (snapshot keygen)", parse: asString },
  { key: "follow", flag: "--follow", env: "ABUSE_INTEL_FOLLOW", help: "run as a read-only edge following the primary at this URL", parse: asUrl },
  { key: "followKey", flag: "--follow-key", env: "ABUSE_INTEL_FOLLOW_KEY", help: "an admin's API key on the primary, for --follow", parse: asString },
  { key: "pubkey", flag: "--pubkey", env: "ABUSE_INTEL_PUBKEY", help: "the primary's public key: an edge, or serve --snapshot, serves only snapshots signed with it", parse: asString },
  { key: "followEverySeconds", flag: "--every", env: "ABUSE_INTEL_FOLLOW_EVERY", help: "seconds (or 60s, 5m) between an edge's pulls (default 60)", parse: asSeconds },
  { key: "threatWindowReports", flag: "--threat-window-reports", env: "ABUSE_INTEL_THREAT_WINDOW_REPORTS", help: "reports detect-threats keeps in memory at most, about 160 bytes each (default 500000)", parse: asReportCount },
  { key: "dnsPort", flag: "--dns-port", env: "ABUSE_INTEL_DNS_PORT", help: "answer the DNS blocklist on this UDP and TCP port (default off; 0 picks a free one)", parse: asPort },
  { key: "dnsHost", flag: "--dns-host", env: "ABUSE_INTEL_DNS_HOST", help: "address the DNS blocklist listens on (default: the --host value)", parse: asHost },
  { key: "dnsZone", flag: "--dns-zone", env: "ABUSE_INTEL_DNS_ZONE", help: "the DNS blocklist's zone (default dnsbl.abuse-intel.internal)", parse: asZone },
  { key: "dnsRiskLevel", flag: "--dns-risk-level", env: "ABUSE_INTEL_DNS_RISK_LEVEL", help: "lowest risk level the DNS blocklist lists: LOW, MEDIUM, HIGH (default), CRITICAL", parse: asRiskLevel },
  { key: "dnsTtl", flag: "--dns-ttl", env: "ABUSE_INTEL_DNS_TTL", help: "TTL of DNS blocklist answers and the SOA minimum, in seconds (default 300)", parse: asIntegerIn(0, 604_800, "a whole number of seconds from 0 to 604800") },
  { key: "dnsAllow", flag: "--dns-allow", env: "ABUSE_INTEL_DNS_ALLOW", help: "comma-separated CIDRs that may query the DNS blocklist; others get REFUSED (default: any)", parse: asCidrList },
  { key: "metricsToken", flag: "--metrics-token", env: "ABUSE_INTEL_METRICS_TOKEN", help: "require Authorization: Bearer TOKEN on GET /metrics (default: open)", parse: asString },
  { key: "forwardKey", flag: "--forward-key", env: "ABUSE_INTEL_FORWARD_KEY", help: "an edge takes reports and forwards them to its primary with this API key (credited to its account)", parse: asString },
  { key: "forwardQueueMax", flag: "--forward-queue-max", env: "ABUSE_INTEL_FORWARD_QUEUE_MAX", help: "reports an edge's forward queue holds at most (default 1000000)", parse: asIntegerIn(1, 1_000_000_000, "a whole number of reports from 1 to 1000000000") },
  { key: "duplicateWindowMs", flag: "--duplicate-window", env: "ABUSE_INTEL_DUPLICATE_WINDOW", help: "how long before a reporter may report the same address again (default 15m; 0 turns it off)", parse: asWindowMs },
];

export const JOB_SCHEDULE_ENV_PREFIX = "ABUSE_INTEL_SCHEDULE_";

export function defaultConfig(): Config {
  return {
    host: "0.0.0.0",
    port: 8080,
    dataDir: "./data",
    jwtSecret: null,
    jwtTtlSeconds: 3600,
    adminEmail: null,
    adminPassword: null,
    geoMmdb: null,
    snapshot: null,
    apiKeys: [],
    retentionDays: 365,
    halfLifeDays: 30,
    scoring: {},
    schedules: {},
    syncMode: "full",
    accessLog: false,
    metricsToken: null,
    signKey: null,
    follow: null,
    followKey: null,
    pubkey: null,
    followEverySeconds: 60,
    threatWindowReports: DEFAULT_WINDOW_REPORTS,
    dnsPort: null,
    dnsHost: null,
    dnsZone: "dnsbl.abuse-intel.internal",
    dnsRiskLevel: "HIGH",
    dnsTtl: 300,
    dnsAllow: null,
    forwardKey: null,
    forwardQueueMax: 1_000_000,
    duplicateWindowMs: 15 * 60_000,
  };
}

function configError(message: string): AppError {
  return new AppError("bad_request", message);
}

/**
 * Resolves the configuration from the command's flags and the environment. `flags` maps a flag (e.g.
 * "--port") to its values as given on the command line.
 */
export function resolveConfig(flags: Map<string, string[]>, env: Record<string, string | undefined> = process.env): Config {
  const config = defaultConfig() as unknown as Record<string, unknown>;
  for (const spec of OPTIONS) {
    const fromFlag = flags.get(spec.flag);
    const fromEnv = env[spec.env];
    if (fromFlag && fromFlag.length > 0) {
      const values = fromFlag.map((raw) => spec.parse(raw, spec.flag));
      config[spec.key] = spec.repeatable ? values : values[values.length - 1];
    } else if (fromEnv !== undefined && fromEnv !== "") {
      config[spec.key] = spec.repeatable
        ? fromEnv.split(",").map((s) => s.trim()).filter(Boolean).map((raw) => spec.parse(raw, spec.env))
        : spec.parse(fromEnv, spec.env);
    }
  }
  const schedules: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(JOB_SCHEDULE_ENV_PREFIX) && value) {
      schedules[name.slice(JOB_SCHEDULE_ENV_PREFIX.length).toLowerCase().replaceAll("_", "-")] = value;
    }
  }
  for (const raw of flags.get("--schedule") ?? []) {
    const eq = raw.indexOf("=");
    if (eq <= 0) throw configError(`--schedule takes NAME=PATTERN, got "${raw}"`);
    schedules[raw.slice(0, eq)] = raw.slice(eq + 1);
  }
  config.schedules = schedules;
  return config as unknown as Config;
}

/** The scoring parameters in force: --scoring overrides, then --half-life-days and --retention-days. */
export function scoringParametersOf(config: Pick<Config, "scoring" | "retentionDays" | "halfLifeDays">): ScoringParameters {
  return resolveScoringParameters({ ...config.scoring, retentionDays: config.retentionDays, halfLifeDays: config.halfLifeDays });
}
