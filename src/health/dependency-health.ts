import { isConnectionError, isConnectionErrorText } from "./connection-errors.js";
import { backoffDelayMs, RECONNECT_BACKOFF, type BackoffPolicy } from "./backoff.js";

/** What a long-lived process depends on. */
export type DependencyName = "postgres" | "redis" | "api" | "object-store";

/** One dependency as this process sees it now. */
export interface DependencyState {
  readonly name: DependencyName;
  readonly up: boolean;
  /** When it went down or came back (when the process first used it, for one never lost). */
  readonly since: Date;
  /** Why it is down: the last error seen. */
  readonly error?: string;
  /** How many outages this process has seen of it. */
  readonly outages: number;
}

export interface DependencyHealthOptions {
  readonly log: (level: "info" | "warn", message: string) => void;
  readonly backoff?: BackoffPolicy;
  readonly now?: () => Date;
  readonly random?: () => number;
}

interface Tracked {
  state: DependencyState;
  probe?: () => Promise<unknown>;
  timer?: NodeJS.Timeout | undefined;
  attempt: number;
}

/**
 * Which dependencies this process can reach. A component that fails to reach one calls `failed`; the first failure
 * of an outage is logged (once, not per attempt) and, when the dependency has a probe, the probe is retried with
 * capped backoff and jitter until it answers; then `recovered` logs how long it was away. `/readyz` and the metrics
 * read `states()`. The probe's timer keeps the process alive during an outage: a process whose connections are all
 * gone still has something to wait for.
 */
export class DependencyHealth {
  readonly #o: Required<Omit<DependencyHealthOptions, "random">> & { random: () => number };
  readonly #deps = new Map<DependencyName, Tracked>();
  readonly #listeners = new Set<(state: DependencyState) => void>();
  #closed = false;

  constructor(options: DependencyHealthOptions) {
    this.#o = {
      log: options.log,
      backoff: options.backoff ?? RECONNECT_BACKOFF,
      now: options.now ?? (() => new Date()),
      random: options.random ?? Math.random,
    };
  }

  /** Starts tracking `name` (up); `probe` resolves when it answers again. Registering again replaces the probe. */
  register(name: DependencyName, probe?: () => Promise<unknown>): void {
    const tracked = this.#deps.get(name);
    if (tracked) {
      if (probe) tracked.probe = probe;
      return;
    }
    this.#deps.set(name, { state: { name, up: true, since: this.#o.now(), outages: 0 }, ...(probe ? { probe } : {}), attempt: 0 });
  }

  /** A call to `name` failed because it could not be reached. Logged once per outage. */
  failed(name: DependencyName, error: unknown): void {
    if (this.#closed) return;
    this.register(name);
    const tracked = this.#deps.get(name)!;
    const message = error instanceof Error ? error.message : String(error);
    if (!tracked.state.up) {
      tracked.state = { ...tracked.state, error: message };
      return;
    }
    tracked.state = { name, up: false, since: this.#o.now(), error: message, outages: tracked.state.outages + 1 };
    tracked.attempt = 0;
    this.#o.log("warn", `${name} is unreachable (${message}); retrying until it answers`);
    this.#emit(tracked.state);
    this.#scheduleProbe(tracked);
  }

  /** A call to `name` succeeded: if it was down, it is back. */
  recovered(name: DependencyName): void {
    const tracked = this.#deps.get(name);
    if (!tracked || tracked.state.up) return;
    clearTimeout(tracked.timer);
    tracked.timer = undefined;
    const now = this.#o.now();
    const away = ((now.getTime() - tracked.state.since.getTime()) / 1000).toFixed(1);
    tracked.state = { name, up: true, since: now, outages: tracked.state.outages };
    this.#o.log("info", `${name} answers again after ${away} s away`);
    this.#emit(tracked.state);
  }

  isUp(name: DependencyName): boolean {
    return this.#deps.get(name)?.state.up ?? true;
  }

  states(): DependencyState[] {
    return [...this.#deps.values()].map((t) => t.state);
  }

  /** Calls `listener` on every change (down or back); returns the unsubscribe. */
  onChange(listener: (state: DependencyState) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops probing (the process is stopping). */
  close(): void {
    this.#closed = true;
    for (const t of this.#deps.values()) clearTimeout(t.timer);
  }

  #scheduleProbe(tracked: Tracked): void {
    const probe = tracked.probe;
    if (!probe || this.#closed || tracked.timer) return;
    const delay = backoffDelayMs(tracked.attempt++, this.#o.backoff, this.#o.random);
    tracked.timer = setTimeout(() => {
      tracked.timer = undefined;
      if (this.#closed || tracked.state.up) return;
      probe().then(
        () => this.recovered(tracked.state.name),
        (err: unknown) => {
          if (tracked.state.up) return;
          tracked.state = { ...tracked.state, error: err instanceof Error ? err.message : String(err) };
          this.#scheduleProbe(tracked);
        },
      );
    }, delay);
  }

  #emit(state: DependencyState): void {
    for (const l of this.#listeners) l(state);
  }
}

/**
 * An error handler for a loop that talks to `dependency`: a failure to reach it is reported to `health` (logged
 * once per outage, then quiet until it answers again); any other error goes to `otherwise`.
 */
export function reportOutages<A extends unknown[]>(
  health: DependencyHealth | undefined,
  dependency: DependencyName,
  otherwise: (error: unknown, ...rest: A) => void,
): (error: unknown, ...rest: A) => void {
  return (error, ...rest) => {
    if (health && isConnectionError(error)) health.failed(dependency, error);
    else otherwise(error, ...rest);
  };
}

/**
 * A log for components that report errors as text: a warning or error that says `dependency` could not be reached
 * goes to `health` instead (logged once per outage); every other line goes to `log`.
 */
export function logOutagesOnce<L extends string>(
  health: DependencyHealth,
  dependency: DependencyName,
  log: (level: L, message: string) => void,
): (level: L, message: string) => void {
  return (level, message) => {
    if ((level === "warn" || level === "error") && isConnectionErrorText(message)) {
      health.failed(dependency, new Error(message.split("\n")[0]));
    } else log(level, message);
  };
}
