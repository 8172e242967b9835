// Which subscriptions may take the dispatcher's free delivery slots, so that hung receivers cannot hold a healthy
// subscriber's events back (docs/decisions.md, "Webhooks and jobs"):
//
// - Slots are shared out round-robin: in the round of share `n`, only a subscription with fewer than `n` attempts
//   under way may take one, so a subscription with nothing in flight is served before another's second attempt.
// - Subscriptions whose last attempt failed hold at most half the slots between them, however many they are: the
//   other half stays free for the subscriptions whose receivers answer.

export interface SlotLimits {
  maxInFlight: number;
  maxInFlightPerWebhook: number;
}

export class DeliverySlots {
  private readonly heldBy = new Map<number, number>();
  /** Subscriptions whose last finished attempt failed (a timeout, a refused connection, a non-2xx answer). */
  private readonly failing = new Set<number>();
  private held = 0;
  private readonly failingLimit: number;

  constructor(private readonly limits: SlotLimits) {
    this.failingLimit = Math.max(1, Math.floor(limits.maxInFlight / 2));
  }

  get free(): number {
    return this.limits.maxInFlight - this.held;
  }

  /** The largest share a round gives (the per-subscription limit). */
  get largestShare(): number {
    return this.limits.maxInFlightPerWebhook;
  }

  /** Whether the subscription may take a slot in the round of this share. */
  mayTake(webhookId: number, share: number): boolean {
    if (this.free <= 0 || this.holding(webhookId) >= share) return false;
    return !this.failing.has(webhookId) || this.heldByFailing() < this.failingLimit;
  }

  /** The subscriptions that may not take a slot in the round of this share (for the due deliveries' query). */
  closed(share: number): number[] {
    const closed = [...this.heldBy].filter(([, n]) => n >= share).map(([id]) => id);
    if (this.heldByFailing() >= this.failingLimit) closed.push(...this.failing);
    return closed;
  }

  /** Whether a subscription holds `share` slots or more: a round of a larger share may find it more work. */
  anyHolding(share: number): boolean {
    for (const n of this.heldBy.values()) if (n >= share) return true;
    return false;
  }

  take(webhookId: number): void {
    this.heldBy.set(webhookId, this.holding(webhookId) + 1);
    this.held++;
  }

  give(webhookId: number): void {
    const n = this.holding(webhookId) - 1;
    if (n <= 0) this.heldBy.delete(webhookId);
    else this.heldBy.set(webhookId, n);
    this.held--;
  }

  /** Notes how the subscription's latest attempt ended; true when that changed whether it is failing. */
  finished(webhookId: number, delivered: boolean): boolean {
    const was = this.failing.has(webhookId);
    if (delivered) this.failing.delete(webhookId);
    else this.failing.add(webhookId);
    return was === delivered;
  }

  /** Whether the subscription's last finished attempt failed. */
  isFailing(webhookId: number): boolean {
    return this.failing.has(webhookId);
  }

  private holding(webhookId: number): number {
    return this.heldBy.get(webhookId) ?? 0;
  }

  private heldByFailing(): number {
    let n = 0;
    for (const id of this.failing) n += this.holding(id);
    return n;
  }
}
