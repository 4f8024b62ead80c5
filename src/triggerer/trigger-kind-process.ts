/// <reference path="../import-meta.d.ts" />
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { SerializedError } from "../errors/index.js";
import { defineTriggerCheck, TriggerError, type CheckContext, type CheckResult, type TriggerRegistry } from "../trigger-checks/index.js";
import type { FromKindProcess, ToKindProcess } from "./trigger-kind-protocol.js";

const PRECOMPILED = import.meta.precompiled;
// Plain JS: registers tsx, then runs trigger-kind-child.ts; precompiled, both compiled (the child's stack traces name
// the sources through their maps, as they do through tsx).
const ENTRY = fileURLToPath(
  PRECOMPILED ? new URL("trigger-kind-entry.mjs", PRECOMPILED) : new URL("./trigger-kind-entry.mjs", import.meta.url),
);
/** What definitions files import as `tributary`: this checkout's SDK, the instance the child's code uses. */
const SDK_URL = PRECOMPILED ? new URL("index.mjs", PRECOMPILED).href : new URL("../index.ts", import.meta.url).href;
/** How long importing the definitions may take before the process counts as broken. */
const START_LIMIT_MS = 120_000;

export interface TriggerKindProcessOptions {
  readonly definitionsDir: string;
  /** The definitions files to import, relative to the directory (reload() replaces them). */
  readonly files: readonly string[];
  /** Heap limit of the child (default 512 MB). */
  readonly memoryMb?: number;
  /** A dead child is started again no sooner than this after the last start (default 1 s). */
  readonly restartDelayMs?: number;
}

interface Pending {
  resolve(result: CheckResult): void;
  reject(error: unknown): void;
}

interface Child {
  readonly proc: ChildProcess;
  readonly ready: Promise<{ kinds: readonly string[]; errors: readonly SerializedError[] }>;
  readonly pending: Map<number, Pending>;
}

/**
 * A child process that imports the definitions files and runs the checks of
 * the custom trigger kinds they export, so user code never runs in the
 * triggerer itself. Its {@link registry} holds one stand-in check per kind;
 * checkTrigger applies the triggerer's timeout to them as to built-in ones.
 * When the child dies, the checks it was running fail (the triggerer retries
 * them) and the next check starts a new one.
 *
 * @example
 * import { discoverDefinitionFiles } from "../loader/index.js";
 * import { builtInTriggers } from "../trigger-checks/index.js";
 * // given definitionsDir: string
 * const kinds = await TriggerKindProcess.start({ definitionsDir, files: await discoverDefinitionFiles(definitionsDir) });
 * const registry = { ...builtInTriggers(), ...kinds.registry };
 */
export class TriggerKindProcess {
  #options: TriggerKindProcessOptions;
  #child: Child | undefined;
  #nextId = 0;
  #closed = false;
  #lastStart = 0;
  #kinds: readonly string[] = [];
  #registry: TriggerRegistry = Object.freeze({});
  /** Files that failed to import (their kinds are unknown to the triggerer). */
  loadErrors: readonly SerializedError[] = [];

  private constructor(options: TriggerKindProcessOptions) {
    this.#options = options;
  }

  /** Starts the child and waits until it has imported the definitions. */
  static async start(options: TriggerKindProcessOptions): Promise<TriggerKindProcess> {
    const host = new TriggerKindProcess(options);
    try {
      await host.#load();
    } catch (err) {
      await host.close();
      throw err;
    }
    return host;
  }

  /** The kinds the last import found; a child restarted after a crash serves the same. */
  get kinds(): readonly string[] {
    return this.#kinds;
  }

  /** The pid of the running child (tests kill it). */
  get pid(): number | undefined {
    return this.#child?.proc.pid;
  }

  /** A stand-in check for each custom kind: args, templates and the check itself are the child's business. */
  get registry(): TriggerRegistry {
    return this.#registry;
  }

  /** The definitions changed: a new child imports `files`; checks running in the old one fail and are retried. */
  async reload(files: readonly string[]): Promise<void> {
    this.#options = { ...this.#options, files };
    // The new child takes over as soon as it is spawned, so no check starts a third one meanwhile.
    const old = this.#child;
    try {
      await this.#load();
    } finally {
      if (old) await this.#end(old);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const child = this.#child;
    this.#child = undefined;
    if (child) await this.#end(child);
  }

  async #load(): Promise<void> {
    const { kinds, errors } = await this.#spawn().ready;
    this.#kinds = kinds;
    this.loadErrors = errors;
    const entries = kinds.map((kind) => [
      kind,
      defineTriggerCheck({
        schema: z.record(z.string(), z.unknown()),
        check: (args: Record<string, unknown>, context: CheckContext) => this.#call(kind, args, context),
      }),
    ]);
    this.#registry = Object.freeze(Object.fromEntries(entries) as TriggerRegistry);
  }

  /** Asks the child to exit (it does when the IPC channel closes); SIGKILLs it after 5 s. */
  async #end(child: Child): Promise<void> {
    const exited = new Promise<void>((resolve) => {
      if (child.proc.exitCode !== null || child.proc.signalCode !== null) resolve();
      else child.proc.once("exit", () => resolve());
    });
    if (child.proc.connected) child.proc.disconnect();
    const kill = setTimeout(() => child.proc.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(kill);
  }

  async #call(kind: string, args: Record<string, unknown>, context: CheckContext): Promise<CheckResult> {
    const child = await this.#running();
    await child.ready;
    context.signal.throwIfAborted();
    const id = this.#nextId++;
    return new Promise<CheckResult>((resolve, reject) => {
      const onAbort = () => this.#send(child, { t: "abort", id });
      context.signal.addEventListener("abort", onAbort, { once: true });
      const done = () => context.signal.removeEventListener("abort", onAbort);
      child.pending.set(id, {
        resolve: (result) => (done(), resolve(result)),
        reject: (error) => (done(), reject(error)),
      });
      this.#send(child, { t: "check", id, kind, args, partition: context.partition, now: context.now.getTime() });
    });
  }

  /** The live child, or a new one once the restart delay has passed since the last start. */
  async #running(): Promise<Child> {
    if (this.#closed) throw new TriggerError("TRIGGER_CHECK_ABORTED", "the trigger-kind process is closed");
    if (this.#child) return this.#child;
    const wait = this.#lastStart + (this.#options.restartDelayMs ?? 1_000) - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return this.#child ?? this.#spawn();
  }

  #spawn(): Child {
    this.#lastStart = Date.now();
    const proc = fork(ENTRY, [SDK_URL, this.#options.definitionsDir, ...this.#options.files], {
      // Explicit, so the parent's own flags (a tsx loader, inspector) are not inherited.
      execArgv: [`--max-old-space-size=${this.#options.memoryMb ?? 512}`],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      serialization: "json",
    });
    const pending = new Map<number, Pending>();
    let markReady!: (value: { kinds: readonly string[]; errors: readonly SerializedError[] }) => void;
    let failStart!: (error: unknown) => void;
    const ready = new Promise<{ kinds: readonly string[]; errors: readonly SerializedError[] }>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    ready.catch(() => undefined);
    const child: Child = { proc, ready, pending };
    this.#child = child;
    const startTimer = setTimeout(() => proc.kill("SIGKILL"), START_LIMIT_MS);
    startTimer.unref();
    proc.on("message", (message: FromKindProcess) => {
      if (message.t === "ready") {
        clearTimeout(startTimer);
        markReady(message);
        return;
      }
      const p = pending.get(message.id);
      pending.delete(message.id);
      if (!p) return;
      if (message.error) {
        const e = message.error;
        p.reject(new TriggerError(e.code, e.message, e.location ? { location: e.location } : {}));
      } else p.resolve(message.result!);
    });
    proc.once("exit", (code, signal) => {
      clearTimeout(startTimer);
      if (this.#child === child) this.#child = undefined;
      const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
      const error = new TriggerError(
        "TRIGGER_CHECK_FAILED",
        `the process running custom trigger kinds ${how} during the check; it is started again and the check is retried`,
      );
      failStart(
        new TriggerError(
          "TRIGGER_KINDS_LOAD_FAILED",
          `the process importing the definitions for their trigger kinds ${how} before it was ready`,
        ),
      );
      for (const p of pending.values()) p.reject(error);
      pending.clear();
    });
    proc.on("error", () => undefined); // exit follows
    return child;
  }

  #send(child: Child, message: ToKindProcess): void {
    if (!child.proc.connected) return; // It died: its exit handler fails the checks.
    try {
      child.proc.send(message);
    } catch {
      // The channel closed under us: same as above.
    }
  }
}
