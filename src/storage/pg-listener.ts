import pg from "pg";
import { StorageError } from "../errors/index.js";
import { backoffDelayMs, isConnectionError, RECONNECT_BACKOFF } from "../health/index.js";
import { assertChannel, type NotificationHandler, type Unlisten } from "./database-handle.js";
import { quoteIdent } from "./quote-ident.js";

export interface PgListenerOptions {
  clientConfig: pg.ClientConfig;
  onError: (error: Error) => void;
  /** Called after the connection was lost and re-established (notifications may have been missed). */
  onReconnect?: () => void;
  maxBackoffMs?: number;
}

/**
 * LISTEN on one dedicated connection (pooled connections cannot listen).
 * When that connection drops, it reconnects with backoff and re-issues
 * LISTEN for every channel that still has handlers.
 */
export class PgListener {
  readonly #options: PgListenerOptions;
  readonly #handlers = new Map<string, Set<NotificationHandler>>();
  #client: pg.Client | undefined;
  #connecting: Promise<pg.Client> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #closed = false;

  constructor(options: PgListenerOptions) {
    this.#options = options;
  }

  async listen(channel: string, handler: NotificationHandler): Promise<Unlisten> {
    assertChannel(channel);
    this.#assertOpen();
    let handlers = this.#handlers.get(channel);
    const first = !handlers;
    if (!handlers) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
    }
    handlers.add(handler);
    try {
      const client = await this.#connect();
      if (first) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (error) {
      // Postgres is away (a process started before it, or during a restart): the handler stays, and the reconnect
      // issues LISTEN for it once the server answers. Any other failure is the caller's.
      if (!isConnectionError(error)) {
        this.#remove(channel, handler);
        throw error;
      }
      this.#options.onError(error instanceof Error ? error : new Error(String(error)));
      this.#scheduleReconnect();
    }
    return async () => {
      if (this.#remove(channel, handler) && this.#client) {
        await this.#client.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => undefined);
      }
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#handlers.clear();
    const client = this.#client ?? (await this.#connecting?.catch(() => undefined));
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** The backend pid of the listening connection (tests use it to kill the session). */
  get backendPid(): number | undefined {
    return (this.#client as (pg.Client & { processID?: number }) | undefined)?.processID;
  }

  /** Returns true when the channel has no handlers left. */
  #remove(channel: string, handler: NotificationHandler): boolean {
    const handlers = this.#handlers.get(channel);
    if (!handlers) return false;
    handlers.delete(handler);
    if (handlers.size > 0) return false;
    this.#handlers.delete(channel);
    return true;
  }

  #connect(): Promise<pg.Client> {
    if (this.#client) return Promise.resolve(this.#client);
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #open(): Promise<pg.Client> {
    const client = new pg.Client(this.#options.clientConfig);
    client.on("notification", (message) => this.#dispatch(message.channel, message.payload ?? ""));
    client.on("error", (error) => this.#lost(client, error));
    client.on("end", () => this.#lost(client));
    try {
      await client.connect();
      for (const channel of this.#handlers.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (error) {
      client.removeAllListeners("end");
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      this.#assertOpen();
    }
    this.#client = client;
    return client;
  }

  #dispatch(channel: string, payload: string): void {
    for (const handler of this.#handlers.get(channel) ?? []) {
      try {
        handler(payload);
      } catch (error) {
        this.#options.onError(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  #lost(client: pg.Client, error?: Error): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    if (error) this.#options.onError(error);
    client.end().catch(() => undefined);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer || this.#handlers.size === 0) return;
    const delay = backoffDelayMs(this.#failures, {
      initialMs: RECONNECT_BACKOFF.initialMs,
      maxMs: this.#options.maxBackoffMs ?? RECONNECT_BACKOFF.maxMs,
    });
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (this.#closed || this.#handlers.size === 0) return;
      this.#connect().then(
        () => {
          this.#failures = 0;
          this.#options.onReconnect?.();
        },
        (error: unknown) => {
          this.#failures++;
          this.#options.onError(error instanceof Error ? error : new Error(String(error)));
          this.#scheduleReconnect();
        },
      );
    }, delay);
    this.#retryTimer.unref();
  }

  #assertOpen(): void {
    if (this.#closed) throw new StorageError("DATABASE_CLOSED", "the Postgres listener has been closed");
  }
}
