import type { AlertRecord } from "../../storage/index.js";
import type { AlertSink } from "./alert-sink.js";
import { DEFAULT_ALERTS_CONFIG, type AlertsConfig } from "./alerts-config.js";
import { LogSink } from "./log-sink.js";
import { WebhookSink } from "./webhook-sink.js";

/**
 * Decides which sinks an alert goes to: every route whose `owner` is one of
 * the alert's owners (an asset's `owner:`; for a definitions file, the owners
 * of the assets it defined), or the default sinks when no route matches.
 */
export class AlertRouter {
  private readonly byOwner = new Map<string, string[]>();

  constructor(
    private readonly sinks: ReadonlyMap<string, AlertSink>,
    routes: AlertsConfig["routes"],
    private readonly defaults: readonly string[],
  ) {
    for (const r of routes) this.byOwner.set(r.owner, [...(this.byOwner.get(r.owner) ?? []), ...r.sinks]);
  }

  /** Sinks built from a validated config; `log` receives the log sink's lines. */
  static fromConfig(config: AlertsConfig = DEFAULT_ALERTS_CONFIG, log: (line: string) => void = defaultLog): AlertRouter {
    const sinks = new Map<string, AlertSink>();
    for (const [name, s] of Object.entries(config.sinks)) {
      sinks.set(
        name,
        s.type === "webhook" ? new WebhookSink(name, { url: s.url, timeoutMs: s.timeoutMs, headers: s.headers }) : new LogSink(name, log),
      );
    }
    return new AlertRouter(sinks, config.routes, config.default);
  }

  route(alert: AlertRecord): AlertSink[] {
    const names = new Set<string>();
    for (const owner of ownersOf(alert)) for (const n of this.byOwner.get(owner) ?? []) names.add(n);
    if (names.size === 0) for (const n of this.defaults) names.add(n);
    return [...names].flatMap((n) => this.sinks.get(n) ?? []);
  }

  /** The longest any sink may take. */
  get maxTimeoutMs(): number {
    let max = 0;
    for (const s of this.sinks.values()) max = Math.max(max, s.timeoutMs);
    return max;
  }
}

function ownersOf(alert: AlertRecord): string[] {
  const listed = alert.payload["owners"];
  if (Array.isArray(listed)) return listed.filter((o): o is string => typeof o === "string");
  return alert.owner ? [alert.owner] : [];
}

function defaultLog(line: string): void {
  process.stderr.write(`${line}\n`);
}
