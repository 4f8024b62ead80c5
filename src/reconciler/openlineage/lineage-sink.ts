import { appendFile } from "node:fs/promises";
import { TributaryError } from "../../errors/index.js";
import type { OpenLineageEvent } from "./lineage-events.js";
import type { OpenLineageConfig } from "./openlineage-config.js";

/** What a send achieved: the first `delivered` events were accepted, in order; `error` stopped the rest. */
export interface LineageDelivery {
  readonly delivered: number;
  readonly error?: Error;
}

/**
 * Somewhere OpenLineage events go. A send never throws: it reports how far it
 * got. It starts no write that could end after `deadline` (a `performance.now()`
 * value: the sender's lease must outlive its writes) — except the first, so a
 * send always makes progress.
 */
export interface LineageSink {
  readonly description: string;
  send(events: readonly OpenLineageEvent[], deadline: number): Promise<LineageDelivery>;
}

/**
 * POSTs each event to `<url>/api/v1/lineage` (the OpenLineage HTTP API that
 * Marquez and DataHub serve), one at a time in order, stopping at the first
 * non-2xx answer, network error or time limit.
 */
export class HttpLineageSink implements LineageSink {
  readonly description: string;
  readonly #endpoint: string;

  constructor(
    baseUrl: string,
    private readonly timeoutMs = 10_000,
  ) {
    this.#endpoint = `${baseUrl}/api/v1/lineage`;
    // The URL may carry credentials: messages name its origin only.
    this.description = `OpenLineage endpoint ${new URL(this.#endpoint).origin}`;
  }

  async send(events: readonly OpenLineageEvent[], deadline: number): Promise<LineageDelivery> {
    for (let i = 0; i < events.length; i++) {
      if (i > 0 && performance.now() + this.timeoutMs >= deadline) return { delivered: i };
      try {
        await this.#post(events[i]!);
      } catch (err) {
        return { delivered: i, error: err as Error };
      }
    }
    return { delivered: events.length };
  }

  async #post(event: OpenLineageEvent): Promise<void> {
    let response: Response;
    try {
      response = await fetch(this.#endpoint, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(event),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error)?.name === "TimeoutError";
      throw new TributaryError(
        timedOut ? "OPENLINEAGE_TIMEOUT" : "OPENLINEAGE_UNREACHABLE",
        timedOut
          ? `${this.description} did not answer within ${this.timeoutMs} ms`
          : `${this.description} could not be reached: ${(err as Error)?.message ?? String(err)}`,
        { cause: err },
      );
    }
    const body = await response.text().catch(() => "");
    if (!response.ok) {
      throw new TributaryError(
        "OPENLINEAGE_REJECTED",
        `${this.description} answered HTTP ${response.status}${body ? `: ${body.slice(0, 200)}` : ""}`,
      );
    }
  }
}

/** Appends each event as one JSON line (one write per batch). */
export class FileLineageSink implements LineageSink {
  readonly description: string;

  constructor(private readonly file: string) {
    this.description = `OpenLineage file ${file}`;
  }

  async send(events: readonly OpenLineageEvent[]): Promise<LineageDelivery> {
    if (events.length === 0) return { delivered: 0 };
    try {
      await appendFile(this.file, events.map((e) => `${JSON.stringify(e)}\n`).join(""));
      return { delivered: events.length };
    } catch (err) {
      return {
        delivered: 0,
        error: new TributaryError("OPENLINEAGE_FILE_UNWRITABLE", `${this.description} cannot be appended to: ${(err as Error).message}`, {
          cause: err,
        }),
      };
    }
  }
}

/** The sink a parsed config names. */
export function lineageSinkFor(config: OpenLineageConfig): LineageSink {
  return config.kind === "http" ? new HttpLineageSink(config.url) : new FileLineageSink(config.file);
}
