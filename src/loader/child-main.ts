// The body of a definitions child process, bundled with the SDK into the child
// runtime (see child-runtime.ts) and started by child-entry.mjs: imports
// exactly one compiled definitions file, reports what it exports, and exits.
// The parent enforces the time limit; the heap limit is a node flag.
import { realpathSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import * as sdk from "../index.js";
import type { SerializedError } from "../errors/index.js";
import type { AssetSpec, CheckSpec } from "../sdk/index.js";
import { SDK_GLOBAL, type ChildMessage, type ExportedSpec, type LoadReply, type LoadRequest } from "./child-protocol.js";
import { describeLoadFailure } from "./load-failure.js";

export interface ChildMainOptions {
  readonly request: LoadRequest;
  /** `import()` from an ES module: the runtime itself is a script. */
  readonly importModule: (url: string) => Promise<Record<string, unknown>>;
  /** Runs just before the process exits after replying. */
  readonly beforeExit?: () => void;
}

export function childMain({ request, importModule, beforeExit }: ChildMainOptions): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error("child-main: start me through the definitions loader (fork with IPC)");
  let replied = false;

  const reply = (message: LoadReply): void => {
    if (replied) return;
    replied = true;
    // Exit once the message is flushed: timers or sockets the file left open must not keep us alive.
    send(message, () => {
      beforeExit?.();
      process.exit(0);
    });
  };

  const fail = (err: unknown): void => {
    let error: SerializedError;
    try {
      error = describeLoadFailure(err, { dir: request.dir, file: request.file, relFile: request.relFile, sdk });
    } catch (describeErr) {
      // Never let reporting an error become a new one (it would come back here).
      error = {
        name: "LoadError",
        code: "LOAD_IMPORT_ERROR",
        message: `${request.relFile}: importing the file failed: ${String(err)} (and describing it failed: ${String(describeErr)})`,
        location: { file: request.relFile },
      };
    }
    reply({ type: "result", status: "error", assets: [], checks: [], warnings: [], error });
  };

  // A promise the file leaves rejected, or a throw from a callback, is the file's error too.
  process.on("uncaughtException", fail);
  process.on("unhandledRejection", fail);
  // The parent went away: nothing left to report to.
  process.on("disconnect", () => process.exit(0));

  // Compiled definitions files import the SDK from here, so they share this instance.
  (globalThis as Record<symbol, unknown>)[Symbol.for(SDK_GLOBAL)] = sdk;
  // Stack traces point at the definitions sources (file:line:col), through the
  // compiled file's source map: error messages and `definedIn` need them.
  process.setSourceMapsEnabled(true);
  send({ type: "started" } satisfies ChildMessage);
  importModule(pathToFileURL(request.bundle).href).then(
    (namespace) => {
      try {
        reply(describeExports(namespace, request));
      } catch (err) {
        fail(err);
      }
    },
    fail,
  );
}

function canonical(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** The file's own definitions, with warnings for the exports that are not counted. Throws when one cannot be stored. */
function describeExports(namespace: Record<string, unknown>, request: LoadRequest): LoadReply {
  const self = canonical(request.file);
  const assets: ExportedSpec<AssetSpec>[] = [];
  const checks: ExportedSpec<CheckSpec>[] = [];
  const warnings: string[] = [];
  const seen = new Map<unknown, string>();
  // Named exports first, so `export default orders` next to `export const orders` counts as "orders".
  const names = Object.keys(namespace).sort((a, b) => Number(a === "default") - Number(b === "default"));
  for (const exportName of names) {
    // May throw for a binding still in its temporal dead zone (a circular import between files).
    const value = namespace[exportName];
    const kind = sdk.definitionKind(value);
    if (!kind) continue;
    const def = value as { spec: AssetSpec | CheckSpec; definedIn: string | undefined };
    const what = kind === "check" ? `check "${(def.spec as CheckSpec).name}"` : `asset "${(def.spec as AssetSpec).key}"`;
    const first = seen.get(value);
    if (first !== undefined) {
      warnings.push(`export "${exportName}" is the same ${what} as export "${first}"; it is counted once`);
      continue;
    }
    if (def.definedIn !== undefined && canonical(def.definedIn) !== self) {
      const from = path.relative(request.dir, canonical(def.definedIn)).split(path.sep).join("/");
      warnings.push(`export "${exportName}" re-exports ${what} defined in ${from}; it is loaded from there, not counted here`);
      continue;
    }
    seen.set(value, exportName);
    const bad = sdk.findNonJson(def.spec, kind === "check" ? "check" : "config");
    if (bad) {
      throw new sdk.DefinitionError(`${what}: value at ${bad} cannot be stored as JSON`, {
        code: "DEFINITION_NOT_SERIALIZABLE",
        location: {
          ...(kind === "check" ? {} : { assetKey: (def.spec as AssetSpec).key }),
          field: bad.replace(/ \(.*$/, ""),
        },
      });
    }
    if (kind === "check") checks.push({ exportName, spec: def.spec as CheckSpec });
    else assets.push({ exportName, spec: def.spec as AssetSpec });
  }
  if (assets.length === 0 && checks.length === 0) {
    warnings.push(
      "the file exports no assets, source assets or checks of its own; definitions must be exported " +
        "(export const orders = asset(...)) for Tributary to see them",
    );
  }
  return { type: "result", status: "ok", assets, checks, warnings };
}
