// Webhook subscriptions of one user (contract section 7): create (the secret shown once), list, get, update,
// delete, ping, and the record of deliveries with their attempts. Another user's subscription is "not found".

import { randomBytes } from "node:crypto";
import type { Clock } from "../../domain/clock";
import { isoTime } from "../../domain/clock";
import { AppError, type FieldError, notFound, validationFailed } from "../../domain/errors";
import {
  type EventKind,
  parseEventList,
  webhookSecretProblem,
  webhookUrlProblem,
} from "../../domain/webhook-payload";
import { inTransaction, type Store } from "../../store/database";
import { type WebhookRow, WebhookTable } from "../../store/webhooks";
import { enqueueEvent } from "./outbox";
import type { Page } from "../../domain/pagination";

export interface NewWebhook {
  url: string;
  events: EventKind[];
  /** Null: generate one. */
  secret: string | null;
}

export interface WebhookChanges {
  url?: string;
  events?: EventKind[];
  active?: boolean;
  secret?: string;
}

/** A subscription as `GET /v1/webhooks` shows it: never the secret. */
export interface WebhookView {
  id: string;
  url: string;
  events: EventKind[];
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The `POST /v1/webhooks` answer: the only time the secret is shown. */
export interface CreatedWebhookView {
  id: string;
  url: string;
  events: EventKind[];
  active: boolean;
  secret: string;
  createdAt: string;
}

export interface AttemptView {
  attemptedAt: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryView {
  id: string;
  /** The X-Webhook-Delivery header value. */
  deliveryId: string;
  event: string;
  status: "pending" | "delivered" | "failed";
  attemptCount: number;
  /** When the next attempt is due; null once delivered or failed. */
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
  /** The body sent, parsed. */
  payload: unknown;
  attempts: AttemptView[];
}

export interface PingQueued {
  webhookId: string;
  event: "ping";
  queuedAt: string;
}

const GENERATED_SECRET_PREFIX = "whsec_";

/** 32 random bytes, base64url: 256 bits, printable, safe in any header or config file. */
export function generateSecret(): string {
  return GENERATED_SECRET_PREFIX + randomBytes(32).toString("base64url");
}

function bodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new AppError("bad_request", "The request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

/** Reads `POST /v1/webhooks` `{url, events, secret?}`; every bad field is listed in one validation_failed. */
export function parseNewWebhook(body: unknown): NewWebhook {
  const b = bodyObject(body);
  const problems: FieldError[] = [];
  const urlProblem = webhookUrlProblem(b.url);
  if (urlProblem) problems.push({ field: "url", message: urlProblem });
  const events = parseEventList(b.events);
  if ("problem" in events) problems.push({ field: "events", message: events.problem });
  let secret: string | null = null;
  if (b.secret !== undefined && b.secret !== null) {
    const secretProblem = webhookSecretProblem(b.secret);
    if (secretProblem) problems.push({ field: "secret", message: secretProblem });
    else secret = b.secret as string;
  }
  if (problems.length > 0) throw validationFailed(problems);
  return { url: b.url as string, events: (events as { events: EventKind[] }).events, secret };
}

/** Reads `PATCH /v1/webhooks/{id}`: any of url, events, active, secret; at least one. */
export function parseWebhookChanges(body: unknown): WebhookChanges {
  const b = bodyObject(body);
  const problems: FieldError[] = [];
  const changes: WebhookChanges = {};
  if (b.url !== undefined) {
    const problem = webhookUrlProblem(b.url);
    if (problem) problems.push({ field: "url", message: problem });
    else changes.url = b.url as string;
  }
  if (b.events !== undefined) {
    const events = parseEventList(b.events);
    if ("problem" in events) problems.push({ field: "events", message: events.problem });
    else changes.events = events.events;
  }
  if (b.active !== undefined) {
    if (typeof b.active !== "boolean") problems.push({ field: "active", message: "must be true or false" });
    else changes.active = b.active;
  }
  if (b.secret !== undefined) {
    const problem = webhookSecretProblem(b.secret);
    if (problem) problems.push({ field: "secret", message: problem });
    else changes.secret = b.secret as string;
  }
  if (problems.length === 0 && Object.keys(changes).length === 0) {
    problems.push({ field: "(body)", message: "give at least one of url, events, active, secret" });
  }
  if (problems.length > 0) throw validationFailed(problems);
  return changes;
}

/** Reads `?limit&offset` of the deliveries listing: limit 1..100 (default 20), offset ≥ 0 (default 0). */


const view = (row: WebhookRow): WebhookView => ({
  id: String(row.id),
  url: row.url,
  events: JSON.parse(row.events) as EventKind[],
  active: row.active,
  createdAt: isoTime(row.createdAt),
  updatedAt: isoTime(row.updatedAt),
});

/** An id from a path: a positive decimal integer, else null (which the caller answers with 404). */
export function parseId(raw: string): number | null {
  return /^[1-9]\d{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : null;
}

/**
 * Subscriptions an account may keep: every event is copied once per receiving subscription, so one account with
 * thousands of them made every report cost thousands of deliveries for everyone's dispatcher.
 */
export const MAX_WEBHOOKS_PER_ACCOUNT = 25;

export interface WebhookServiceDeps {
  store: Store;
  clock: Clock;
  /** Called after an event was committed to the outbox (the composition nudges the dispatcher). */
  onEventQueued?: () => void;
}

export class WebhookService {
  private readonly store: Store;
  private readonly table: WebhookTable;
  private readonly clock: Clock;
  private readonly onEventQueued: () => void;

  constructor(deps: WebhookServiceDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.onEventQueued = deps.onEventQueued ?? (() => {});
    this.table = new WebhookTable(deps.store);
  }

  create(userId: number, input: NewWebhook): CreatedWebhookView {
    const now = this.clock.now();
    const secret = input.secret ?? generateSecret();
    const row = inTransaction(this.store, () => {
      if (this.table.ofUser(userId).length >= MAX_WEBHOOKS_PER_ACCOUNT) {
        throw validationFailed(
          [{ field: "url", message: `an account keeps at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks; delete one first` }],
          `At most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks per account`,
        );
      }
      return this.table.insert({ userId, url: input.url, events: JSON.stringify(input.events), secret, active: true, createdAt: now, updatedAt: now });
    });
    return { id: String(row.id), url: row.url, events: input.events, active: row.active, secret, createdAt: isoTime(now) };
  }

  list(userId: number): WebhookView[] {
    return this.table.ofUser(userId).map(view);
  }

  get(userId: number, id: number): WebhookView {
    return view(this.owned(userId, id));
  }

  update(userId: number, id: number, changes: WebhookChanges): WebhookView {
    this.owned(userId, id);
    const set: Partial<WebhookRow> = { updatedAt: this.clock.now() };
    if (changes.url !== undefined) set.url = changes.url;
    if (changes.events !== undefined) set.events = JSON.stringify(changes.events);
    if (changes.active !== undefined) set.active = changes.active;
    if (changes.secret !== undefined) set.secret = changes.secret;
    const row = this.table.update(id, set);
    return view(row);
  }

  /** Deletes the subscription with its deliveries and their attempts; undelivered events for it are dropped. */
  delete(userId: number, id: number): void {
    this.owned(userId, id);
    inTransaction(this.store, () => this.table.deleteWithDeliveries(id));
  }

  /** Queues a `ping` event for this one subscription (delivered by the dispatcher like any other event). */
  ping(userId: number, id: number): PingQueued {
    const row = this.owned(userId, id);
    if (!row.active) {
      throw validationFailed([{ field: "active", message: "the webhook is inactive; activate it with PATCH first" }], "The webhook is inactive");
    }
    const now = this.clock.now();
    inTransaction(this.store, () => enqueueEvent(this.store, "ping", { webhookId: id }, now, id));
    this.onEventQueued();
    return { webhookId: String(id), event: "ping", queuedAt: isoTime(now) };
  }

  /** The subscription's deliveries, newest first, each with its attempts in order. */
  deliveries(userId: number, id: number, page: Page): { data: DeliveryView[]; pagination: Page & { total: number } } {
    this.owned(userId, id);
    const { rows, total } = this.table.deliveries(id, page.limit, page.offset);
    const attemptsOf = new Map<number, AttemptView[]>();
    for (const a of this.table.attemptsOf(rows.map((r) => r.id))) {
      let list = attemptsOf.get(a.deliveryRowId);
      if (!list) attemptsOf.set(a.deliveryRowId, (list = []));
      list.push({ attemptedAt: isoTime(a.attemptedAt), statusCode: a.statusCode, error: a.error, durationMs: a.durationMs });
    }
    const data = rows.map(
      (r): DeliveryView => ({
        id: String(r.id),
        deliveryId: r.deliveryId,
        event: r.event,
        status: r.status,
        attemptCount: r.attempts,
        nextAttemptAt: r.status === "pending" ? isoTime(r.nextAttemptAt) : null,
        lastStatusCode: r.lastStatusCode,
        lastError: r.lastError,
        createdAt: isoTime(r.createdAt),
        updatedAt: isoTime(r.updatedAt),
        payload: JSON.parse(r.body),
        attempts: attemptsOf.get(r.id) ?? [],
      }),
    );
    return { data, pagination: { ...page, total } };
  }

  /** The row if it exists and belongs to the user; another user's subscription is indistinguishable from none. */
  private owned(userId: number, id: number): WebhookRow {
    const row = this.table.owned(userId, id);
    if (!row) throw notFound("No such webhook");
    return row;
  }
}
