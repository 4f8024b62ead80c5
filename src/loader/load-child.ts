// The body of a definitions child process (after child-entry.mjs registered
// tsx): warms up (hooks, the SDK), tells the parent it is ready, imports
// exactly one definitions file, reports what it exports, and exits. Started
// by DefinitionsChild with a heap limit; the parent enforces the time limit.
import { realpathSync } from "node:fs";
import { register } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MessageChannel } from "node:worker_threads";
import type { ChildMessage, ExportedSpec, LoadReply, LoadRequest } from "./child-protocol.js";
import { describeLoadFailure } from "./load-failure.js";
import type { SerializedError } from "../errors/index.js";
import type { AssetSpec, CheckSpec } from "../sdk/index.js";

const dir = process.argv[2];
const sdkUrl = process.argv[3];
if (!dir || !sdkUrl || !process.send) {
  process.stderr.write("load-child: start me through the definitions loader (child-entry.mjs)\n");
  process.exit(2);
}
const { port1, port2 } = new MessageChannel();
register(new URL("./definitions-hooks.mjs", import.meta.url).href, {
  parentURL: import.meta.url,
  data: { sdkUrl, dirUrl: pathToFileURL(dir).href.replace(/\/?$/, "/"), port: port2 },
  transferList: [port2],
});
port1.unref();

// Warm-up: what every definitions file imports (already loaded when it is a bundle).
const sdk = (await import(sdkUrl)) as typeof import("../index.js");

let current: LoadRequest | undefined;
let replied = false;

function reply(message: ChildMessage): void {
  if (message.type === "result") {
    if (replied) return;
    replied = true;
    // Exit once the message is flushed: timers or sockets the file left open must not keep us alive.
    process.send!(message, () => process.exit(0));
    return;
  }
  process.send!(message);
}

function fail(err: unknown): void {
  if (!current) {
    process.stderr.write(`load-child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  }
  const request = current;
  let error: SerializedError;
  try {
    error = describeLoadFailure(err, { dir: dir!, file: request.file, relFile: request.relFile, sdk });
  } catch (describeErr) {
    // Never let reporting an error become a new one (it would come back here).
    error = {
      name: "LoadError",
      code: "LOAD_IMPORT_ERROR",
      message: `${request.relFile}: importing the file failed: ${String(err)} (and describing it failed: ${String(describeErr)})`,
      location: { file: request.relFile },
    };
  }
  void importedFiles().then((imports) =>
    reply({ type: "result", status: "error", assets: [], checks: [], warnings: [], error, imports }),
  );
}

// A promise the file leaves rejected, or a throw from a callback, is the file's error too.
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
// The parent went away: nothing left to report to.
process.on("disconnect", () => process.exit(0));

/** Asks the hooks thread which local files were resolved; the reply follows every earlier record. */
function importedFiles(): Promise<string[]> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve([]), 1000);
    port1.once("message", (message: { urls: string[] }) => {
      clearTimeout(timer);
      resolve(message.urls.map((u) => fileURLToPath(u)));
    });
    port1.postMessage({ type: "imports" });
  });
}

function canonical(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

async function load(request: LoadRequest): Promise<void> {
  current = request;
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(request.file).href)) as Record<string, unknown>;
  } catch (err) {
    fail(err);
    return;
  }
  const self = canonical(request.file);
  const assets: ExportedSpec<AssetSpec>[] = [];
  const checks: ExportedSpec<CheckSpec>[] = [];
  const warnings: string[] = [];
  const seen = new Map<unknown, string>();
  // Named exports first, so `export default orders` next to `export const orders` counts as "orders".
  const names = Object.keys(namespace).sort((a, b) => Number(a === "default") - Number(b === "default"));
  for (const exportName of names) {
    let value: unknown;
    try {
      value = namespace[exportName];
    } catch (err) {
      // A binding still in its temporal dead zone: a circular import between files.
      fail(err);
      return;
    }
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
      const from = path.relative(dir!, canonical(def.definedIn)).split(path.sep).join("/");
      warnings.push(
        `export "${exportName}" re-exports ${what} defined in ${from}; it is loaded from there, not counted here`,
      );
      continue;
    }
    seen.set(value, exportName);
    const bad = sdk.findNonJson(def.spec, kind === "check" ? "check" : "config");
    if (bad) {
      fail(
        new sdk.DefinitionError(`${what}: value at ${bad} cannot be stored as JSON`, {
          code: "DEFINITION_NOT_SERIALIZABLE",
          location: {
            ...(kind === "check" ? {} : { assetKey: (def.spec as AssetSpec).key }),
            field: bad.replace(/ \(.*$/, ""),
          },
        }),
      );
      return;
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
  const imports = await importedFiles();
  reply({ type: "result", status: "ok", assets, checks, warnings, imports } satisfies LoadReply);
}

process.once("message", (message: LoadRequest) => {
  void load(message);
});
reply({ type: "ready" });
