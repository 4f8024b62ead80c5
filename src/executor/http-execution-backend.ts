import { serializeError, TributaryError } from "../errors/index.js";
import type { ExecutionBackend, StepDispatch, StepInputs, StepResult, StepStarted } from "../execution/index.js";
import { backoffDelayMs, RECONNECT_BACKOFF, type DependencyHealth } from "../health/index.js";
import { TryLogShipper } from "./try-log-shipper.js";

export interface HttpExecutionBackendOptions {
  /** The API server, e.g. `http://tributary-api:3000`; the routes are under `/execution/v1`. */
  readonly url: string;
  /**
   * Attempts of a call that meets a network error, a 5xx or a 429 before it fails. Default: no limit — an API server
   * being deployed or restarted is waited for (backoff from `backoffMs`, default 250 ms, doubling to 5 s, with
   * jitter); the server itself ends a try that waits too long (no heartbeat), and then refuses its calls (409).
   */
  readonly attempts?: number;
  readonly backoffMs?: number;
  /** Told when the server cannot be reached and when it answers again (logged once per outage). */
  readonly health?: DependencyHealth;
  /** Per request (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Ship each try's log (its dispatch's logRef) to the server while it runs (default true, every 500 ms). */
  readonly shipLogs?: boolean;
  readonly shipIntervalMs?: number;
  /**
   * Told when the server refuses a try for good (401 expired/invalid token,
   * 403, 409 stale: the step was reassigned or ended): the worker should stop
   * that try (`executor.cancel([stepId], …)`); its reports are dropped.
   */
  readonly onTryRejected?: (step: { readonly stepId: number; readonly tryNumber: number }, error: ExecutionApiCallError) => void;
  /** Where notes go (dropped stale results, shipping failures); default stderr. */
  readonly log?: (message: string) => void;
  readonly fetch?: typeof fetch;
}

/**
 * An execution API call that failed: `status` is the HTTP status (0: the
 * server was not reached), `code` the server's error code.
 */
export class ExecutionApiCallError extends TributaryError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, options);
  }

  /** The server refused the try itself: retrying cannot help. */
  get rejectsTry(): boolean {
    return this.status === 401 || this.status === 403 || this.status === 409;
  }
}

/** Most tries one batch call carries (the server's limit). */
const MAX_BATCH_TRIES = 1000;
/** Bytes of reports per batch call: under the server's limits (64 MB for finish, 4 MB for the others), with room for the envelope. */
const MAX_BATCH_BYTES = { inputs: 3 * 1024 * 1024, start: 3 * 1024 * 1024, heartbeat: 3 * 1024 * 1024, finish: 60 * 1024 * 1024 } as const;

/** Input reads in flight at once; calls made meanwhile wait and go out together. */
const MAX_INPUTS_IN_FLIGHT = 4;

type BatchRoute = keyof typeof MAX_BATCH_BYTES;
type TryRef = { readonly stepId: number; readonly tryNumber: number };
/** What became of one item of a batch call: the server's value for it, or why it failed. */
type ItemOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

interface TryEntry {
  readonly stepId: number;
  readonly tryNumber: number;
  token: string;
  shipper: TryLogShipper | undefined;
}

/**
 * The ExecutionBackend of a remote worker: every report goes to the API
 * server's execution API with the try's token (StepDispatch.token), so the
 * worker needs no database credentials. A batch of reports is one call to
 * the server's `/batch/…` routes (per 1 000 tries), each item with its own
 * token; the server answers each item (input reads asked for one by one
 * are coalesced too, see sendWaitingInputs). Network errors and 5xx are retried
 * with backoff (bounded), and an item the server refuses (401/403/409: the
 * step was reassigned, or the try already ended) is dropped with a note, not
 * thrown for the whole batch. Log chunks, dynamic partitions and
 * materialisation checks go per try. Remote workers get no follow-up steps
 * from `finished`.
 *
 * @example
 * import type { StepDispatch } from "../execution/index.js";
 * // given definitionsDir: string, dispatchWithToken: StepDispatch
 * const backend = new HttpExecutionBackend({ url: "http://api:3000", onTryRejected: (s) => executor.cancel([s.stepId], "stale") });
 * const executor = new LocalExecutor(backend, { definitionsDir });
 * executor.submit([dispatchWithToken]);
 */
export class HttpExecutionBackend implements ExecutionBackend {
  private readonly base: string;
  private readonly fetch: typeof fetch;
  private readonly log: (message: string) => void;
  /** Tries this worker holds a token for, by `${stepId}:${tryNumber}`, newest last. */
  private readonly tries = new Map<string, TryEntry>();
  /** False once the server answered a batch route 404 (a server older than them): reports then go per try. */
  private batchRoutes = true;
  /** loadInputs calls waiting for one of the MAX_INPUTS_IN_FLIGHT slots. */
  private readonly inputsWaiting: {
    readonly steps: readonly StepDispatch[];
    resolve(outcomes: ItemOutcome[]): void;
    reject(err: unknown): void;
  }[] = [];
  private inputsInFlight = 0;

  constructor(private readonly options: HttpExecutionBackendOptions) {
    this.base = `${options.url.replace(/\/+$/, "")}/execution/v1`;
    this.fetch = options.fetch ?? fetch;
    this.log = options.log ?? ((message) => process.stderr.write(`tributary worker: ${message}\n`));
  }

  /** Remembers a dispatch's token (and starts shipping its log); loadInputs does it for every dispatch it is given. */
  register(dispatch: StepDispatch): void {
    const key = keyOf(dispatch);
    if (!dispatch.token) return;
    const known = this.tries.get(key);
    if (known) {
      known.token = dispatch.token; // issued again (re-dispatched): the newer token is the valid one
      return;
    }
    const entry: TryEntry = { stepId: dispatch.stepId, tryNumber: dispatch.tryNumber, token: dispatch.token, shipper: undefined };
    if (this.options.shipLogs !== false) {
      entry.shipper = new TryLogShipper(dispatch.logRef, (chunk, offset) => this.shipChunk(entry, chunk, offset), {
        intervalMs: this.options.shipIntervalMs ?? 500,
        onError: (err) => {
          // A refused try ships no more; anything else is retried on the next tick.
          if (err instanceof ExecutionApiCallError && err.rejectsTry) void entry.shipper?.stop();
          else this.log(`shipping the log of try ${entry.tryNumber} of step ${entry.stepId}: ${err.message} (retrying)`);
        },
      }).start();
    }
    this.tries.set(key, entry);
  }

  async loadInputs(steps: readonly StepDispatch[]): Promise<ReadonlyMap<number, StepInputs>> {
    for (const s of steps) this.register(s);
    const outcomes = await new Promise<ItemOutcome[]>((resolve, reject) => {
      this.inputsWaiting.push({ steps, resolve, reject });
      this.sendWaitingInputs();
    });
    const out = new Map<number, StepInputs>();
    steps.forEach((s, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) out.set(s.stepId, withFailureClass(outcome.value as StepInputs));
      // The execution API could not be reached, or refused the try (it was reassigned, its token expired): nothing
      // the step did.
      else if (outcome.error instanceof ExecutionApiCallError) {
        out.set(s.stepId, { ok: false, error: serializeError(outcome.error), failureClass: "infrastructure" });
      } else throw outcome.error;
    });
    return out;
  }

  async started(events: readonly StepStarted[]): Promise<void> {
    const outcomes = await this.send("start", events, (e) => ({
      workerId: e.workerId,
      hostname: e.hostname,
      pid: e.pid,
      startedAt: e.startedAt.toISOString(),
    }));
    this.settle(events, outcomes);
  }

  async heartbeat(steps: readonly { readonly stepId: number; readonly tryNumber: number }[]): Promise<void> {
    this.settle(steps, await this.send("heartbeat", steps, () => ({})));
  }

  async finished(results: readonly StepResult[]): Promise<readonly StepDispatch[]> {
    // Each log goes out whole before the finish: the server archives it when the try ends.
    await Promise.all(results.map((r) => this.tries.get(keyOf(r))?.shipper?.stop()));
    const outcomes = await this.send("finish", results, (r) => ({
      outcome: r.outcome,
      startedAt: r.startedAt?.toISOString() ?? null,
      endedAt: r.endedAt.toISOString(),
      workerId: r.workerId,
      ...(r.hostname !== undefined ? { hostname: r.hostname } : {}),
      ...(r.pid !== undefined ? { pid: r.pid } : {}),
    }));
    results.forEach((r, i) => {
      if (outcomes[i]!.ok) this.tries.delete(keyOf(r));
    });
    this.settle(results, outcomes);
    return [];
  }

  async addDynamicPartitions(name: string, keys: readonly string[]): Promise<void> {
    await this.call(this.anyEntry(), "POST", "dynamic-partitions", { name, keys });
  }

  async materialized(assetKey: string, partitionKey: string): Promise<{ eventId: number } | undefined> {
    const query = new URLSearchParams({ asset: assetKey, partition: partitionKey });
    const { eventId } = (await this.call(this.anyEntry(), "GET", `materialized?${query}`)) as { eventId: number | null };
    return eventId === null ? undefined : { eventId };
  }

  /** Stops shipping every log (a final flush each); the worker calls it when it shuts down. */
  async close(): Promise<void> {
    await Promise.all([...this.tries.values()].map((t) => t.shipper?.stop()));
  }

  /**
   * A BullMQ worker takes its jobs one at a time, so inputs are asked for
   * step by step: the first MAX_INPUTS_IN_FLIGHT calls go out at once, and
   * the calls made while they are in flight go out together in one batch
   * when a slot frees up.
   */
  private sendWaitingInputs(): void {
    while (this.inputsInFlight < MAX_INPUTS_IN_FLIGHT && this.inputsWaiting.length > 0) {
      const calls = this.inputsWaiting.splice(0);
      this.inputsInFlight++;
      void this.send(
        "inputs",
        calls.flatMap((c) => c.steps),
        () => ({}),
      )
        .then(
          (outcomes) => {
            let from = 0;
            for (const c of calls) c.resolve(outcomes.slice(from, (from += c.steps.length)));
          },
          (err: unknown) => {
            for (const c of calls) c.reject(err);
          },
        )
        .finally(() => {
          this.inputsInFlight--;
          this.sendWaitingInputs();
        });
    }
  }

  /**
   * Settles a batch's outcomes: a try the server refused is reported to
   * onTryRejected and dropped; other failures are thrown together, so the
   * caller retries the batch (calls are idempotent: a finish that already
   * landed then answers 409 and is dropped).
   */
  private settle(items: readonly TryRef[], outcomes: readonly ItemOutcome[]): void {
    const failures: unknown[] = [];
    items.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) return;
      const err = outcome.error;
      if (err instanceof ExecutionApiCallError && err.rejectsTry) {
        this.log(`try ${item.tryNumber} of step ${item.stepId}: dropped, ${err.message}`);
        const entry = this.tries.get(keyOf(item));
        this.tries.delete(keyOf(item));
        void entry?.shipper?.stop();
        this.options.onTryRejected?.({ stepId: item.stepId, tryNumber: item.tryNumber }, err);
        return;
      }
      failures.push(err);
    });
    // A failed call fails each of its items with the same error: it is thrown once.
    const distinct = [...new Set(failures)];
    if (distinct.length === 1) throw distinct[0];
    if (distinct.length > 1)
      throw new AggregateError(distinct, `${distinct.length} execution API reports failed: ${(distinct[0] as Error).message}`);
  }

  /**
   * Sends one report per try to `POST /batch/<route>`, in calls of at most
   * MAX_BATCH_TRIES items and MAX_BATCH_BYTES; what became of each item, in
   * order. A try without a token fails unsent; a call that fails after its
   * retries fails each of its items.
   */
  private async send<T extends TryRef>(
    route: BatchRoute,
    items: readonly T[],
    bodyOf: (item: T) => Record<string, unknown>,
  ): Promise<ItemOutcome[]> {
    const outcomes: ItemOutcome[] = new Array(items.length);
    const chunks: { index: number; entry: TryEntry; body: Record<string, unknown>; json: string }[][] = [];
    let chunk: (typeof chunks)[number] = [];
    let bytes = 0;
    // The server takes one item per try: a try given twice is sent once, and both get its answer.
    const first = new Map<string, number>();
    const repeats: [index: number, of: number][] = [];
    items.forEach((item, index) => {
      const seen = first.get(keyOf(item));
      if (seen !== undefined) {
        repeats.push([index, seen]);
        return;
      }
      first.set(keyOf(item), index);
      const entry = this.tries.get(keyOf(item));
      if (!entry) {
        outcomes[index] = { ok: false, error: missingToken(item) };
        return;
      }
      const body = bodyOf(item);
      const json = JSON.stringify({ stepId: entry.stepId, tryNumber: entry.tryNumber, token: entry.token, ...body });
      const size = Buffer.byteLength(json);
      // A report too large for any batch goes in one of its own: the server's answer (413) then fails it alone.
      if (chunk.length >= MAX_BATCH_TRIES || (chunk.length > 0 && bytes + size > MAX_BATCH_BYTES[route])) {
        chunks.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push({ index, entry, body, json });
      bytes += size + 1;
    });
    if (chunk.length > 0) chunks.push(chunk);
    await Promise.all(
      chunks.map(async (c) => {
        const answers = await this.sendChunk(route, c);
        c.forEach(({ index }, i) => (outcomes[index] = answers[i]!));
      }),
    );
    for (const [index, of] of repeats) outcomes[index] = outcomes[of]!;
    return outcomes;
  }

  private async sendChunk(
    route: BatchRoute,
    chunk: readonly { entry: TryEntry; body: Record<string, unknown>; json: string }[],
  ): Promise<ItemOutcome[]> {
    if (!this.batchRoutes) return this.sendEach(route, chunk);
    let answer: unknown;
    try {
      answer = await this.request(
        "POST",
        `${this.base}/batch/${route}`,
        `batch/${route}`,
        { "content-type": "application/json" },
        `{"tries":[${chunk.map((c) => c.json).join(",")}]}`,
      );
    } catch (err) {
      if (err instanceof ExecutionApiCallError && err.status === 404) {
        if (this.batchRoutes) this.log(`the server has no batch routes (${err.message}): reporting per try`);
        this.batchRoutes = false;
        return this.sendEach(route, chunk);
      }
      // A body the server refuses (a bad field, too large) would fail every item with it, on every retry of the
      // batch: sent per try, the bad item fails alone.
      if (err instanceof ExecutionApiCallError && (err.status === 400 || err.status === 413) && chunk.length > 1) {
        this.log(`${err.message}: sending the ${chunk.length} reports of that batch one by one`);
        return this.sendEach(route, chunk);
      }
      return chunk.map(() => ({ ok: false, error: err }));
    }
    const results = (answer as { results?: unknown } | undefined)?.results;
    if (!Array.isArray(results) || results.length !== chunk.length) {
      const error = new ExecutionApiCallError(0, "EXECUTION_API_BAD_ANSWER", `POST batch/${route}: the answer has no result per try`);
      return chunk.map(() => ({ ok: false, error }));
    }
    return chunk.map(({ entry }, i): ItemOutcome => {
      const r = results[i] as {
        stepId?: unknown;
        tryNumber?: unknown;
        status?: unknown;
        error?: { code?: string; message?: string };
        value?: unknown;
      };
      if (r?.stepId !== entry.stepId || r.tryNumber !== entry.tryNumber) {
        return {
          ok: false,
          error: new ExecutionApiCallError(
            0,
            "EXECUTION_API_BAD_ANSWER",
            `POST batch/${route}: result ${i} is not about try ${entry.tryNumber} of step ${entry.stepId}`,
          ),
        };
      }
      if (r.status === 200) return { ok: true, value: r.value };
      const status = typeof r.status === "number" ? r.status : 0;
      const error = new ExecutionApiCallError(
        status,
        r.error?.code ?? `HTTP_${status}`,
        `POST batch/${route}: ${status} ${r.error?.message ?? "refused"}`,
      );
      return { ok: false, error };
    });
  }

  /** The per-try routes, one call each: for a server without the batch routes. */
  private sendEach(route: BatchRoute, chunk: readonly { entry: TryEntry; body: Record<string, unknown> }[]): Promise<ItemOutcome[]> {
    return Promise.all(
      chunk.map(({ entry, body }) =>
        (route === "inputs" ? this.call(entry, "GET", "inputs") : this.call(entry, "POST", route, body)).then(
          (value): ItemOutcome => ({ ok: true, value }),
          (error: unknown): ItemOutcome => ({ ok: false, error }),
        ),
      ),
    );
  }

  /** Calls not about one try (dynamic partitions, materialisation checks) go with the newest try's token. */
  private anyEntry(): TryEntry {
    const entry = [...this.tries.values()].at(-1);
    if (entry) return entry;
    throw new ExecutionApiCallError(401, "TOKEN_MISSING", "this worker holds no active try, so it may not call the execution API");
  }

  private async shipChunk(entry: TryEntry, chunk: Uint8Array, offset: number): Promise<void> {
    await this.call(entry, "POST", `logs?offset=${offset}`, chunk);
  }

  /** One call about one try, with the try's token. */
  private call(entry: TryEntry, method: "GET" | "POST", route: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { authorization: `Bearer ${entry.token}` };
    let payload: BodyInit | undefined;
    if (body instanceof Uint8Array) {
      headers["content-type"] = "text/plain; charset=utf-8";
      payload = new Uint8Array(body); // a copy on its own ArrayBuffer, as fetch wants
    } else if (body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    }
    return this.request(
      method,
      `${this.base}/tries/${entry.stepId}/${entry.tryNumber}/${route}`,
      route.replace(/\?.*/, ""),
      headers,
      payload,
    );
  }

  /** One request with retries on network errors, 5xx and 429; the parsed JSON answer, or an ExecutionApiCallError. */
  private async request(
    method: "GET" | "POST",
    url: string,
    label: string,
    headers: Record<string, string>,
    payload: BodyInit | undefined,
  ): Promise<unknown> {
    const attempts = this.options.attempts ?? Number.POSITIVE_INFINITY;
    for (let attempt = 1; ; attempt++) {
      let failure: ExecutionApiCallError;
      try {
        const res = await this.fetch(url, {
          method,
          headers,
          ...(payload !== undefined ? { body: payload } : {}),
          signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 30_000),
        });
        const text = await res.text();
        const json = parseJson(text);
        if (res.status < 500) this.options.health?.recovered("api");
        if (res.ok) return json;
        const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
        failure = new ExecutionApiCallError(
          res.status,
          error?.code ?? `HTTP_${res.status}`,
          `${method} ${label}: ${res.status} ${error?.message ?? text.slice(0, 200)}`,
        );
        if (res.status < 500 && res.status !== 429) throw failure;
      } catch (err) {
        if (err instanceof ExecutionApiCallError) throw err;
        failure = new ExecutionApiCallError(0, "EXECUTION_API_UNREACHABLE", `${method} ${url}: ${(err as Error).message}`, { cause: err });
      }
      if (failure.status === 0 || failure.status >= 500) this.options.health?.failed("api", failure);
      if (attempt >= attempts) throw failure;
      const delay = backoffDelayMs(attempt - 1, {
        initialMs: this.options.backoffMs ?? RECONNECT_BACKOFF.initialMs,
        maxMs: RECONNECT_BACKOFF.maxMs,
      });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** A server from before failure classes answers inputs it cannot read without one: such failures were the step's. */
function withFailureClass(inputs: StepInputs): StepInputs {
  return inputs.ok || inputs.failureClass ? inputs : { ok: false, error: inputs.error, failureClass: "user" };
}

function missingToken(s: TryRef): ExecutionApiCallError {
  return new ExecutionApiCallError(
    401,
    "TOKEN_MISSING",
    `try ${s.tryNumber} of step ${s.stepId} has no execution-API token on this worker: dispatches for remote workers must carry one (StepDispatch.token)`,
  );
}

function keyOf(s: { readonly stepId: number; readonly tryNumber: number }): string {
  return `${s.stepId}:${s.tryNumber}`;
}

function parseJson(text: string): unknown {
  try {
    return text === "" ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}
