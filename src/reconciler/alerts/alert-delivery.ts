import { serializeError } from "../../errors/index.js";
import type { AlertRecord, AlertSettlement, AlertStore, JsonValue } from "../../storage/index.js";
import type { AlertRouter } from "./alert-router.js";
import type { AlertsConfig } from "./alerts-config.js";

export interface AlertDeliveryOptions {
  readonly store: Pick<AlertStore, "claimDue" | "settle">;
  readonly router: AlertRouter;
  readonly delivery: AlertsConfig["delivery"];
  readonly clock?: () => Date;
  /** Alerts claimed (and sent concurrently) per round; default 50. */
  readonly batch?: number;
}

export interface DeliveryResult {
  sent: number;
  retrying: number;
  failed: number;
}

/**
 * Sends due alerts: claims them (SKIP LOCKED, with a lease longer than any
 * send can take, so a second reconciler leaves them alone), sends each to
 * the sinks it is routed to that do not have it yet, and records the
 * outcome: sent, another attempt after an exponential backoff, or failed
 * after `maxAttempts`. No transaction stays open while a sink is called.
 */
export class AlertDelivery {
  private readonly clock: () => Date;

  constructor(private readonly options: AlertDeliveryOptions) {
    this.clock = options.clock ?? (() => new Date());
  }

  async deliver(): Promise<DeliveryResult> {
    const result: DeliveryResult = { sent: 0, retrying: 0, failed: 0 };
    const batch = this.options.batch ?? 50;
    // Sends run concurrently: a round takes about the slowest sink's time limit.
    const leaseMs = this.options.router.maxTimeoutMs * 2 + 30_000;
    for (;;) {
      const claimed = await this.options.store.claimDue({ now: this.clock(), limit: batch, leaseMs });
      if (claimed.length === 0) return result;
      const settlements = await Promise.all(claimed.map((a) => this.attempt(a)));
      await this.options.store.settle(settlements, this.clock());
      for (const s of settlements) {
        if (s.sent) result.sent++;
        else if (s.nextAttemptAt) result.retrying++;
        else result.failed++;
      }
      if (claimed.length < batch) return result;
    }
  }

  private async attempt(alert: AlertRecord): Promise<AlertSettlement> {
    const targets = this.options.router.route(alert).filter((s) => !alert.sentTo.includes(s.name));
    const outcomes = await Promise.allSettled(targets.map((s) => s.send(alert)));
    const sentTo = [...alert.sentTo];
    const errors: { sink: string; error: JsonValue }[] = [];
    outcomes.forEach((o, i) => {
      const sink = targets[i]!;
      if (o.status === "fulfilled") sentTo.push(sink.name);
      else {
        const e = serializeError(o.reason);
        errors.push({ sink: sink.name, error: { code: e.code, message: e.message } });
      }
    });
    if (errors.length === 0) return { id: alert.id, attempt: alert.attempts, sent: true, sentTo };
    const { maxAttempts, retryDelayMs, maxRetryDelayMs } = this.options.delivery;
    const giveUp = alert.attempts >= maxAttempts;
    const delay = Math.min(maxRetryDelayMs, retryDelayMs * 2 ** Math.min(alert.attempts - 1, 30));
    return {
      id: alert.id,
      attempt: alert.attempts,
      sent: false,
      sentTo,
      error: { attempt: alert.attempts, failures: errors },
      nextAttemptAt: giveUp ? null : new Date(this.clock().getTime() + delay),
    };
  }
}
