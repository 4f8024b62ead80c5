import { TributaryError } from "../../errors/index.js";
import type { AlertRecord } from "../../storage/index.js";
import { alertFields, alertText, type AlertSink } from "./alert-sink.js";

export interface WebhookSinkOptions {
  readonly url: string;
  readonly timeoutMs?: number;
  /** Extra request headers (e.g. an Authorization header). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * POSTs each alert as JSON: `text` (what Slack-compatible incoming webhooks
 * show) plus `alert` with the structured fields. A non-2xx answer, a network
 * error or the time limit is a failed send.
 *
 * @example
 * const sink = new WebhookSink("slack-sales", { url: "https://hooks.slack.com/services/…", timeoutMs: 5_000 });
 */
export class WebhookSink implements AlertSink {
  readonly timeoutMs: number;

  constructor(
    readonly name: string,
    private readonly options: WebhookSinkOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  async send(alert: AlertRecord): Promise<void> {
    // Webhook URLs carry their secret in the path: errors name the host only.
    const target = `webhook sink "${this.name}" (${new URL(this.options.url).origin})`;
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...this.options.headers },
        body: JSON.stringify({ text: alertText(alert), alert: alertFields(alert) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error)?.name === "TimeoutError";
      throw new TributaryError(
        timedOut ? "ALERT_SINK_TIMEOUT" : "ALERT_SINK_UNREACHABLE",
        timedOut
          ? `${target} did not answer within ${this.timeoutMs} ms`
          : `${target} could not be reached: ${(err as Error)?.message ?? String(err)}`,
        { cause: err },
      );
    }
    const body = await response.text().catch(() => "");
    if (!response.ok) {
      throw new TributaryError("ALERT_SINK_REJECTED", `${target} answered HTTP ${response.status}${body ? `: ${body.slice(0, 200)}` : ""}`);
    }
  }
}
