/// <reference path="../import-meta.d.ts" />
// The body of a triggerer's trigger-kind child process (after
// trigger-kind-entry.mjs registered tsx): imports the definitions files, keeps
// the custom trigger kinds they export (triggerKind()) and runs their checks
// for the triggerer, several at once, until the triggerer disconnects. User
// code runs here, not in the triggerer: a check that crashes the process
// only costs a restart.
import { register } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel } from "node:worker_threads";
import { serializeError, type SerializedError } from "../errors/index.js";
import { definedTriggerKinds, definitionKind, type TriggerKindDefinition } from "../sdk/index.js";
import { checkTrigger, triggerCheckOf, type TriggerCheck } from "../trigger-checks/index.js";
import { mapStacksLazily } from "../stack-source-maps.mjs";
import type { FromKindProcess, ToKindProcess } from "./trigger-kind-protocol.js";

// Precompiled: stack traces name the sources, each source map read when a stack first needs it.
if (import.meta.precompiled) mapStacksLazily(new URL(import.meta.precompiled));

/** The triggerer enforces each check's timeout; this only bounds a check it forgot to abort. */
const CHILD_CHECK_LIMIT_MS = 3_600_000;

const [sdkUrl, definitionsDir, ...files] = process.argv.slice(2);
if (!sdkUrl || !definitionsDir || !process.send) {
  process.stderr.write("trigger-kind-child: start me through TriggerKindProcess (trigger-kind-entry.mjs)\n");
  process.exit(2);
}
process.title = "tributary-trigger-kinds";

// The worker's module hooks: `tributary` is this checkout's SDK, definitions files are ES modules.
const { port1, port2 } = new MessageChannel();
register(new URL("../executor/worker-hooks.mjs", import.meta.url).href, {
  parentURL: import.meta.url,
  data: { sdkUrl, roots: [pathToFileURL(definitionsDir).href.replace(/\/?$/, "/")], port: port2 },
  transferList: [port2],
});
port1.unref();

const send = (message: FromKindProcess): void => {
  if (process.connected) process.send!(message);
};

/** Imports every file; returns the custom kinds they export and what went wrong. */
async function loadKinds(): Promise<{ registry: Record<string, TriggerCheck<never>>; errors: SerializedError[] }> {
  const registry: Record<string, TriggerCheck<never>> = {};
  const first = new Map<string, { file: string; def: TriggerKindDefinition }>();
  const errors: SerializedError[] = [];
  for (const file of files) {
    let namespace: Record<string, unknown>;
    try {
      namespace = (await import(pathToFileURL(path.resolve(definitionsDir!, file)).href)) as Record<string, unknown>;
    } catch (err) {
      const e = serializeError(err);
      errors.push({ ...e, message: `${file}: importing it for its trigger kinds failed: ${e.message}`, location: { file } });
      continue;
    }
    for (const value of Object.values(namespace)) {
      if (definitionKind(value) !== "trigger") continue;
      const def = value as TriggerKindDefinition;
      const earlier = first.get(def.kind);
      if (earlier === undefined) {
        first.set(def.kind, { file, def });
        registry[def.kind] = triggerCheckOf(def);
      } else if (earlier.def !== def) {
        // The same kind made twice (re-exporting one definition is fine).
        errors.push({
          name: "DefinitionError",
          code: "TRIGGER_KIND_DUPLICATE",
          message: `${file}: trigger kind "${def.kind}" is also defined in ${earlier.file}; the one in ${earlier.file} is used. Give each kind its own name`,
          location: { file },
        });
      }
    }
  }
  // Kinds a helper module defined without a definitions file exporting them.
  for (const def of definedTriggerKinds()) registry[def.kind] ??= triggerCheckOf(def);
  return { registry, errors };
}

const { registry, errors } = await loadKinds();
const running = new Map<number, AbortController>();

// A throw from a check's timer or an unawaited rejection: the check that caused
// it times out in the triggerer; the other checks carry on.
process.on("uncaughtException", (err) =>
  process.stderr.write(`tributary trigger kinds: uncaught exception: ${(err as Error)?.stack ?? String(err)}\n`),
);
process.on("unhandledRejection", (reason) =>
  process.stderr.write(`tributary trigger kinds: unhandled rejection: ${(reason as Error)?.stack ?? String(reason)}\n`),
);
// The triggerer went away: nothing left to answer.
process.on("disconnect", () => process.exit(0));

process.on("message", (message: ToKindProcess) => {
  if (message.t === "abort") {
    running.get(message.id)?.abort(new Error("the triggerer gave up on the check"));
    return;
  }
  const controller = new AbortController();
  running.set(message.id, controller);
  checkTrigger(
    { kind: message.kind, args: message.args },
    { partition: message.partition, now: new Date(message.now), signal: controller.signal },
    { timeoutMs: CHILD_CHECK_LIMIT_MS, registry },
  )
    .then(
      (result) => send({ t: "result", id: message.id, result }),
      (err: unknown) => send({ t: "result", id: message.id, error: serializeError(err) }),
    )
    .finally(() => running.delete(message.id));
});

send({ t: "ready", kinds: Object.keys(registry).sort(), errors });
