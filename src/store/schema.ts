// The one schema of the product. Every table the contract needs is here from the start, so later work adds
// behaviour, not tables. Times are integer milliseconds since the epoch (UTC); ids are integer keys, shown to
// clients as decimal strings. Kept driver-neutral (sqlite-core only) so another SQLite driver can read the file.

import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex, blob } from "drizzle-orm/sqlite-core";
import { addressCategoryCounts, reporterScoreSums, scoreSumAddresses, scoreSumParams } from "./schema-score-sums";
import { forwardedReports } from "./schema-forwarded-reports";

// Tables kept in files of their own, re-exported so that every table is reached through this module (drizzle-kit reads it).
export * from "./schema-score-sums";
export * from "./schema-forwarded-reports";

export const users = sqliteTable(
  "users",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    email: text("email").notNull(),
    passwordHash: text("password_hash").notNull(),
    tier: text("tier", { enum: ["free", "pro", "enterprise"] }).notNull().default("free"),
    role: text("role", { enum: ["user", "admin"] }).notNull().default("user"),
    disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
    /** Overrides the tier's daily request budget when set; null means the tier's. */
    dailyLimit: integer("daily_limit"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /**
     * Tokens and console sessions issued before this time (ms, a whole second) are refused: set when the account
     * is disabled, so enabling it again does not bring back the ones issued before. Null: none refused so.
     */
    tokensValidFrom: integer("tokens_valid_from"),
  },
  (t) => [uniqueIndex("users_email_unique").on(t.email)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    name: text("name").notNull(),
    /** The first characters of the key, shown so an operator can tell keys apart. */
    prefix: text("prefix").notNull(),
    /** Lowercase hex SHA-256 of the whole key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_hash_unique").on(t.keyHash), index("api_keys_user").on(t.userId)],
);

/** Failed logins, for the 10-in-15-minutes lockout (kept in the store so a restart does not reset it). */
export const loginFailures = sqliteTable(
  "login_failures",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    email: text("email").notNull(),
    at: integer("at").notNull(),
  },
  (t) => [index("login_failures_email_at").on(t.email, t.at)],
);

/** Requests counted per account and UTC day (contract section 4). */
export const rateCounters = sqliteTable(
  "rate_counters",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    /** Days since the epoch, UTC. */
    day: integer("day").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.day] })],
);

export const reports = sqliteTable(
  "reports",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** Normalized address text (contract section 2). */
    ip: text("ip").notNull(),
    ipVersion: integer("ip_version").notNull(),
    reporterId: integer("reporter_id")
      .notNull()
      .references(() => users.id),
    category: text("category").notNull(),
    severity: integer("severity").notNull(),
    description: text("description").notNull().default(""),
    evidence: text("evidence"),
    status: text("status", { enum: ["pending", "verified", "rejected", "expired"] }).notNull().default("pending"),
    /** Where it came from: the v1 API, the AbuseIPDB-compatible API, or a CSV import. */
    source: text("source", { enum: ["api", "abuseipdb", "import"] }).notNull().default("api"),
    /** When the abuse was reported (for imports: the report date in the file, so history decays). */
    createdAt: integer("created_at").notNull(),
    statusChangedAt: integer("status_changed_at").notNull(),
  },
  (t) => [
    index("reports_ip_created").on(t.ip, t.createdAt),
    index("reports_reporter_ip_created").on(t.reporterId, t.ip, t.createdAt),
    index("reports_created").on(t.createdAt),
    index("reports_status_created").on(t.status, t.createdAt),
  ],
);

/**
 * The newest report of each reporter and address whose reports were deleted (`/api/v2/clear-address`) less than
 * the duplicate window ago: deleting a report does not let its reporter report the address again sooner.
 */
export const clearedReportTimes = sqliteTable(
  "cleared_report_times",
  {
    reporterId: integer("reporter_id")
      .notNull()
      .references(() => users.id),
    ip: text("ip").notNull(),
    reportedAt: integer("reported_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.reporterId, t.ip] })],
);

/** Every state change of a report, with its time (contract 5.5). */
export const reportTransitions = sqliteTable(
  "report_transitions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    reportId: integer("report_id")
      .notNull()
      .references(() => reports.id),
    fromStatus: text("from_status"),
    toStatus: text("to_status").notNull(),
    at: integer("at").notNull(),
    /** The admin who made it, or null for the system (community verification, expiry). */
    actorUserId: integer("actor_user_id"),
    reason: text("reason"),
  },
  (t) => [index("report_transitions_report").on(t.reportId)],
);

/** The credit ledger: every change of a balance is a row (contract 5.6). */
export const creditLedger = sqliteTable(
  "credit_ledger",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    delta: integer("delta").notNull(),
    reason: text("reason").notNull(),
    reportId: integer("report_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("credit_ledger_user_id").on(t.userId, t.id), index("credit_ledger_report_id").on(t.reportId)],
);

/** Running totals of the ledger, updated in the same transaction as each ledger row. */
export const creditBalances = sqliteTable("credit_balances", {
  userId: integer("user_id")
    .primaryKey()
    .references(() => users.id),
  balance: integer("balance").notNull().default(0),
  lifetimeEarned: integer("lifetime_earned").notNull().default(0),
  reportsAccepted: integer("reports_accepted").notNull().default(0),
  reportsVerified: integer("reports_verified").notNull().default(0),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Per-address state derived from its reports (and feed entries): what the in-memory index is built from at
 * start. Rewritten on every report and by the rescore job.
 */
export const addresses = sqliteTable(
  "addresses",
  {
    ip: text("ip").primaryKey(),
    ipVersion: integer("ip_version").notNull(),
    reputationScore: integer("reputation_score").notNull(),
    totalReports: integer("total_reports").notNull(),
    verifiedReports: integer("verified_reports").notNull(),
    /** Bit i set = category i of src/domain/categories.ts seen in a counting report. */
    categoriesMask: integer("categories_mask").notNull(),
    lastCategory: text("last_category"),
    firstSeen: integer("first_seen"),
    lastSeen: integer("last_seen"),
    /** When the score was last computed (the rescore job moves it as time decays scores). */
    scoredAt: integer("scored_at").notNull(),
    /** The first moment the score will differ from the stored one (decay or retention); null: never. */
    rescoreDueAt: integer("rescore_due_at"),
  },
  // (last_seen DESC, ip): the order of GET /v1/ip/recent, so a page (or a cursor's next page) is read from the
  // index, not sorted; it replaces the index on last_seen alone, so a report still moves one entry (decisions.md).
  (t) => [index("addresses_last_seen_ip").on(sql`${t.lastSeen} DESC`, t.ip), index("addresses_rescore_due").on(t.rescoreDueAt)],
);

/**
 * Every write to `addresses` appends the address here (triggers in migration 0001), so a running server can
 * bring its index up to date after another process (a CLI import, a job run by hand) changed addresses.
 */
export const addressChangeLog = sqliteTable("address_change_log", {
  seq: integer("seq").primaryKey({ autoIncrement: true }),
  ip: text("ip").notNull(),
});

export const allowlist = sqliteTable(
  "allowlist",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    cidr: text("cidr").notNull(),
    note: text("note").notNull().default(""),
    createdAt: integer("created_at").notNull(),
    createdBy: integer("created_by"),
  },
  (t) => [uniqueIndex("allowlist_cidr_unique").on(t.cidr)],
);

export const webhooks = sqliteTable(
  "webhooks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    url: text("url").notNull(),
    /** JSON array of event names. */
    events: text("events").notNull(),
    secret: text("secret").notNull(),
    active: integer("active", { mode: "boolean" }).notNull().default(true),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("webhooks_user").on(t.userId)],
);

/**
 * Events written in the same transaction as the change that caused them (contract section 7); the dispatcher
 * fans each out into one delivery per matching subscription.
 */
export const outbox = sqliteTable(
  "outbox",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    event: text("event").notNull(),
    /** JSON of the event's `data` object. */
    data: text("data").notNull(),
    /** Set for `ping`: the one subscription it goes to. */
    webhookId: integer("webhook_id"),
    createdAt: integer("created_at").notNull(),
    fannedOutAt: integer("fanned_out_at"),
  },
  (t) => [index("outbox_pending").on(t.fannedOutAt, t.id)],
);

export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The X-Webhook-Delivery value: the same on every retry. */
    deliveryId: text("delivery_id").notNull(),
    outboxId: integer("outbox_id")
      .notNull()
      .references(() => outbox.id),
    webhookId: integer("webhook_id")
      .notNull()
      .references(() => webhooks.id),
    event: text("event").notNull(),
    /** The exact body bytes sent (and signed) on every attempt. */
    body: text("body").notNull(),
    status: text("status", { enum: ["pending", "delivered", "failed"] }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_delivery_id").on(t.deliveryId),
    index("webhook_deliveries_due").on(t.status, t.nextAttemptAt),
    index("webhook_deliveries_webhook").on(t.webhookId, t.id),
  ],
);

export const deliveryAttempts = sqliteTable(
  "delivery_attempts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deliveryRowId: integer("delivery_row_id")
      .notNull()
      .references(() => webhookDeliveries.id),
    attemptedAt: integer("attempted_at").notNull(),
    statusCode: integer("status_code"),
    error: text("error"),
    durationMs: integer("duration_ms").notNull(),
  },
  (t) => [index("delivery_attempts_delivery").on(t.deliveryRowId)],
);

export const threats = sqliteTable(
  "threats",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    kind: text("kind", { enum: ["subnet_burst", "category_campaign"] }).notNull(),
    /** What identifies the pattern for the once-per-24-hours rule: a CIDR, or `AS<n>:<CATEGORY>`. */
    patternKey: text("pattern_key").notNull(),
    /** A CIDR (subnet bursts) or null. */
    cidr: text("cidr"),
    asn: integer("asn"),
    category: text("category"),
    ipCount: integer("ip_count").notNull(),
    /** JSON list of the addresses seen. */
    addresses: text("addresses").notNull(),
    windowStart: integer("window_start").notNull(),
    windowEnd: integer("window_end").notNull(),
    detectedAt: integer("detected_at").notNull(),
  },
  (t) => [index("threats_pattern_detected").on(t.patternKey, t.detectedAt), index("threats_detected").on(t.detectedAt)],
);

/**
 * Blocklist feeds (contract section 12): one-off imports (`import blocklist`, `POST /v1/admin/feeds/{name}`)
 * and feeds refreshed on a schedule from a URL or a file. `updated_at` is when the entries were last replaced
 * or added to: a feed entry counts like a verified report made then.
 */
export const feeds = sqliteTable("feeds", {
  name: text("name").primaryKey(),
  category: text("category").notNull(),
  severity: integer("severity").notNull(),
  entryCount: integer("entry_count").notNull().default(0),
  updatedAt: integer("updated_at").notNull(),
  /** Where a scheduled feed is refreshed from: exactly one of url and file_path, or neither (one-off imports). */
  url: text("url"),
  filePath: text("file_path"),
  /** A croner pattern (UTC); null for one-off imports. */
  schedule: text("schedule"),
  /** The validators of the last download, sent back as If-None-Match / If-Modified-Since. */
  etag: text("etag"),
  lastModified: text("last_modified"),
  /** The last refresh attempt, whatever its outcome, and its error (null when it succeeded). */
  lastRefreshAt: integer("last_refresh_at"),
  lastError: text("last_error"),
  /** Lines skipped as bad in the last import or refresh. */
  badLines: integer("bad_lines").notNull().default(0),
  createdAt: integer("created_at").notNull().default(0),
});

export const feedEntries = sqliteTable(
  "feed_entries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    feedName: text("feed_name")
      .notNull()
      .references(() => feeds.name),
    /** Normalized CIDR; a single address is stored as /32 or /128. */
    cidr: text("cidr").notNull(),
    ipVersion: integer("ip_version").notNull(),
    prefixLength: integer("prefix_length").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("feed_entries_feed_cidr").on(t.feedName, t.cidr)],
);

/** Firewall bouncers (contract section 14): an API key each, with the filter and mode of what it is sent. */
export const bouncers = sqliteTable("bouncers", {
  name: text("name").primaryKey(),
  apiKeyId: integer("api_key_id")
    .notNull()
    .unique()
    .references(() => apiKeys.id),
  /** The lowest risk level listed: LOW, MEDIUM, HIGH or CRITICAL. */
  minimumRisk: text("minimum_risk").notNull(),
  /** Comma-separated categories, or null for all. */
  categories: text("categories"),
  mode: text("mode", { enum: ["nftables", "ipset", "iptables"] }).notNull(),
  durationSeconds: integer("duration_seconds").notNull(),
  createdAt: integer("created_at").notNull(),
  /** When it last sent POST /v1/usage-metrics. */
  lastMetricsAt: integer("last_metrics_at"),
});

/**
 * What each bouncer (API key and client address) was last sent whole on the decisions stream: the decision ids in
 * order with the time each was sent, so the next pull sends only the difference and refreshes what runs out.
 */
export const decisionCursors = sqliteTable(
  "decision_cursors",
  {
    apiKeyId: integer("api_key_id")
      .notNull()
      .references(() => apiKeys.id),
    clientAddress: text("client_address").notNull(),
    lastPullAt: integer("last_pull_at").notNull(),
    /** Float64Array of the decision ids, ascending. */
    ids: blob("ids", { mode: "buffer" }).notNull(),
    /** Uint32Array: when each was sent, in seconds since the epoch. */
    sentAt: blob("sent_at", { mode: "buffer" }).notNull(),
    /** JSON: the value of each IPv6 decision id (IPv4 ids carry their value). */
    v6Values: text("v6_values").notNull(),
    /**
     * The journal (decision_journals) this cursor follows, and the sequence number of its list the bouncer holds;
     * null on a cursor written before the journal (ids, sent_at and v6_values then hold what was sent) or emptied.
     */
    filterKey: text("filter_key"),
    seq: integer("seq"),
    /** JSON [[sentAtSeconds, fromSeq, toSeq], ...]: when the entries that entered in (from, to] were last sent, oldest first. */
    refreshQueue: text("refresh_queue"),
  },
  (t) => [primaryKey({ columns: [t.apiKeyId, t.clientAddress] })],
);

/**
 * The decisions each bouncer filter lists, as a journal (services/bouncers/decision-journal.ts): a checkpoint of
 * the list at `checkpoint_seq` (ids ascending, the sequence number each entered at) and the changes after it in
 * decision_changes; the newest sequence number is the larger of `seq` and the changes' newest (a change does not
 * update `seq`: that rewrote the row's blobs, 0.3 s at 1 M listed). Changes up to `pruned_seq` may be gone (older
 * than 620 h).
 */
export const decisionJournals = sqliteTable("decision_journals", {
  filterKey: text("filter_key").primaryKey(),
  seq: integer("seq").notNull(),
  checkpointSeq: integer("checkpoint_seq").notNull(),
  prunedSeq: integer("pruned_seq").notNull(),
  /** Float64Array of the decision ids listed at checkpoint_seq, ascending. */
  ids: blob("ids", { mode: "buffer" }).notNull(),
  /** Uint32Array: the sequence number each of those entered at. */
  entered: blob("entered", { mode: "buffer" }).notNull(),
  /** JSON: the value of each IPv6 decision id among them. */
  v6Values: text("v6_values").notNull(),
});

/** One decision entering (entered 1) or leaving (0) a filter's list at a sequence number; kept 620 h. */
export const decisionChanges = sqliteTable(
  "decision_changes",
  {
    filterKey: text("filter_key").notNull(),
    seq: integer("seq").notNull(),
    id: integer("id").notNull(),
    entered: integer("entered").notNull(),
    at: integer("at").notNull(),
    /** An IPv6 decision's value (IPv4 ids carry theirs). */
    v6Value: text("v6_value"),
  },
  (t) => [primaryKey({ columns: [t.filterKey, t.seq, t.id] }), index("decision_changes_left_at").on(t.filterKey, t.entered, t.at)],
);

export const jobRuns = sqliteTable("job_runs", {
  name: text("name").primaryKey(),
  lastRunAt: integer("last_run_at"),
  lastDurationMs: integer("last_duration_ms"),
  lastError: text("last_error"),
  /** JSON summary of what the last run did. */
  lastResult: text("last_result"),
});

export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const schemaTables = {
  users,
  apiKeys,
  loginFailures,
  rateCounters,
  reports,
  reportTransitions,
  reporterScoreSums,
  addressCategoryCounts,
  scoreSumParams,
  scoreSumAddresses,
  clearedReportTimes,
  creditLedger,
  creditBalances,
  addresses,
  addressChangeLog,
  allowlist,
  webhooks,
  outbox,
  webhookDeliveries,
  deliveryAttempts,
  threats,
  feeds,
  feedEntries,
  bouncers,
  decisionCursors,
  decisionJournals,
  decisionChanges,
  jobRuns,
  meta,
  forwardedReports,
};
