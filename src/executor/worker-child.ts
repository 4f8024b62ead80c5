/// <reference path="../import-meta.d.ts" />
// The body of a LocalExecutor worker child process: after worker-entry.mjs
// registered tsx, or precompiled (dist/cli/worker-child.mjs, started as it
// is). Long-lived: it runs every step the parent sends, several at once,
// until the parent disconnects. It never decides to give up on a step; the
// parent owns timeouts and kills.
import { register } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { TributaryError } from "../errors/index.js";
import { deepFreeze } from "../sdk/index.js";
import { captureConsole, guardProcessExit } from "./process-guards.js";
import { secretBackendFromEnv, SECRETS_BACKEND_ENV, SecretResolver } from "./secrets.js";
import { StepRuntime, tryStorage } from "./step-runtime.js";
import { allowTypeScriptImports } from "./typescript-imports.js";
import { mapStacksLazily } from "../stack-source-maps.mjs";
import type { FromWorker, HostCall, ToWorker, WorkerEvent } from "./worker-protocol.js";

// Precompiled: stack traces name the sources, each source map read when a stack first needs it.
if (import.meta.precompiled) mapStacksLazily(new URL(import.meta.precompiled));

const sdkUrl = process.argv[2];
const definitionsDir = process.argv[3] || undefined;
if (!sdkUrl || !process.send) {
  process.stderr.write("worker-child: start me through LocalExecutor (worker-entry.mjs)\n");
  process.exit(2);
}
process.title = "tributary-worker";

const roots = new Set<string>();
const rootUrl = (dir: string): string => pathToFileURL(dir).href.replace(/\/?$/, "/");
if (definitionsDir) roots.add(rootUrl(definitionsDir));

let nextRootId = 0;
const rootAcks = new Map<number, () => void>();
let hooks: Promise<MessagePort> | undefined;

/**
 * The worker's module hooks (worker-hooks.mjs), registered before the first definitions file is imported as it is,
 * after tsx's. Files compiled by the loader (steps with a code version) need neither.
 */
function moduleHooks(): Promise<MessagePort> {
  hooks ??= allowTypeScriptImports().then(() => {
    const { port1, port2 } = new MessageChannel();
    register(new URL("./worker-hooks.mjs", import.meta.url).href, {
      parentURL: import.meta.url,
      data: { sdkUrl, roots: [...roots], port: port2 },
      transferList: [port2],
    });
    port1.unref();
    port1.on("message", (message: { type: string; id: number }) => {
      if (message.type === "root-added") {
        rootAcks.get(message.id)?.();
        rootAcks.delete(message.id);
      }
    });
    return port1;
  });
  return hooks;
}

/** Makes sure the hooks treat the file's directory as definitions (ES modules, `tributary` resolved). */
async function ensureRoot(file: string): Promise<void> {
  const port1 = await moduleHooks();
  const fileUrl = pathToFileURL(file).href;
  for (const root of roots) if (fileUrl.startsWith(root)) return;
  const url = rootUrl(path.dirname(file));
  roots.add(url);
  const id = nextRootId++;
  await new Promise<void>((resolve) => {
    rootAcks.set(id, resolve);
    port1.ref();
    port1.postMessage({ type: "add-root", id, url });
  }).finally(() => {
    if (rootAcks.size === 0) port1.unref();
  });
}

// Warm-up: every definitions file imports the SDK; load it before the first step.
await import(sdkUrl);

const { reallyExit } = guardProcessExit("throw");
captureConsole();

// --- outgoing events, one IPC message per turn ------------------------------

let outbox: WorkerEvent[] = [];
let flushScheduled = false;

function emit(event: WorkerEvent): void {
  outbox.push(event);
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}

function flush(): void {
  flushScheduled = false;
  if (outbox.length === 0 || !process.connected) return;
  const events = outbox;
  outbox = [];
  process.send!({ t: "events", events } satisfies FromWorker);
}

// --- host calls (round trips to the parent) ---------------------------------

let nextCallId = 0;
const callsWaiting = new Map<number, { resolve: (value: unknown) => void; reject: (err: unknown) => void }>();

function callParent(call: HostCall): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const id = nextCallId++;
    callsWaiting.set(id, { resolve, reject });
    emit({ t: "call", id, call });
  });
}

// The secrets backends the settings name (environment, TRIBUTARY_SECRETS_DIR, TRIBUTARY_SECRETS_BACKEND), once per process.
// A backend module is a user's file like a definitions file: it gets the same hooks (`tributary`, TypeScript).
if (process.env[SECRETS_BACKEND_ENV]) await moduleHooks();
const secrets = new SecretResolver(await secretBackendFromEnv(process.env));
const runtime = new StepRuntime({
  secrets,
  importModule: async (file, codeHash) => {
    // The version the step was planned with; the file as it is only for snapshots that name no version.
    if (codeHash) return (await import("./versioned-import.js")).importVersion(file, codeHash);
    await ensureRoot(file);
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  },
  addDynamicPartitions: async (name, keys) => {
    await callParent({ method: "addDynamicPartitions", name, keys: [...keys] });
  },
  materialized: async (assetKey, partitionKey) =>
    (await callParent({ method: "materialized", assetKey, partitionKey })) as { eventId: number } | undefined,
});

// --- stray errors ------------------------------------------------------------

// A throw from a timer, or a rejection nobody awaited, belongs to the try whose
// code started it (AsyncLocalStorage follows callbacks): that try fails, the
// process and the other steps in it carry on.
process.on("uncaughtException", (err) => {
  const active = tryStorage.getStore();
  if (active) {
    runtime.failFromOutside(active, err, "uncaught exception in a callback");
    return;
  }
  process.stderr.write(`tributary worker: uncaught exception outside any step: ${(err as Error)?.stack ?? String(err)}\n`);
  reallyExit(70);
});
process.on("unhandledRejection", (reason) => {
  const active = tryStorage.getStore();
  if (active) {
    runtime.failFromOutside(active, reason, "unhandled promise rejection");
    return;
  }
  process.stderr.write(`tributary worker: unhandled promise rejection outside any step: ${(reason as Error)?.stack ?? String(reason)}\n`);
});

// The parent went away (closed us, or died): nothing left to report to.
process.on("disconnect", () => reallyExit(0));

process.on("message", (message: ToWorker) => {
  switch (message.t) {
    case "run": {
      // An input several steps read arrived once. Mapped steps share it, read-only (frozen: a fan-out's steps all
      // read the list they were mapped from, and a copy each would cost more than running them); any other step
      // gets a copy of its own, as its inputs always were.
      const handedOut = new Set<number>();
      const inputsOf = (step: (typeof message.steps)[number]): Readonly<Record<string, unknown>> => {
        if (!step.sharedInputs || !message.shared) return step.inputs;
        const inputs: Record<string, unknown> = { ...step.inputs };
        for (const [name, i] of Object.entries(step.sharedInputs)) {
          const value = message.shared[i];
          if (step.d.map) inputs[name] = deepFreeze(value);
          else inputs[name] = handedOut.has(i) || Object.isFrozen(value) ? structuredClone(value) : value;
          handedOut.add(i);
        }
        return inputs;
      };
      for (const step of message.steps) {
        const d = step.d;
        const inputs = inputsOf(step);
        void runtime
          .run(d, inputs, (at) => emit({ t: "started", stepId: d.stepId, tryNumber: d.tryNumber, at }))
          .then((end) =>
            emit({
              t: "done",
              stepId: d.stepId,
              tryNumber: d.tryNumber,
              outcome: end.outcome,
              startedAt: end.startedAt,
              endedAt: end.endedAt,
            }),
          );
      }
      break;
    }
    case "abort": {
      const error = new TributaryError(message.code, message.message, message.location ? { location: message.location } : {});
      runtime.abort(message.stepId, error);
      break;
    }
    case "call-done": {
      const waiting = callsWaiting.get(message.id);
      callsWaiting.delete(message.id);
      if (!waiting) break;
      if (message.error) waiting.reject(new TributaryError(message.error.code, message.error.message));
      else waiting.resolve(message.value ?? undefined);
      break;
    }
  }
});

process.send({ t: "ready" } satisfies FromWorker);
