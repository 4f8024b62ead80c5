/// <reference path="../import-meta.d.ts" />
import { register } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel } from "node:worker_threads";
import { allowTypeScriptImports } from "./typescript-imports.js";
import { importVersion } from "./versioned-import.js";

/** What definitions files import as `tributary`: this checkout's SDK, the instance this code uses (as in worker processes). */
const SDK_URL = import.meta.precompiled ? new URL("index.mjs", import.meta.precompiled).href : new URL("../index.ts", import.meta.url).href;
let hooks: { port: MessagePort; roots: Set<string>; nextId: number; acks: Map<number, () => void> } | undefined;
type MessagePort = InstanceType<typeof MessageChannel>["port1"];

/**
 * Imports definitions files in this process the way a worker child does: the
 * worker's module hooks (registered once per process) resolve `tributary` to
 * this SDK and load files under a definitions root as ES modules.
 */
export function definitionsImporter(
  definitionsDir: string | undefined,
): (file: string, codeHash?: string) => Promise<Record<string, unknown>> {
  const rootUrl = (dir: string): string => pathToFileURL(path.resolve(dir)).href.replace(/\/?$/, "/");
  return async (file, codeHash) => {
    // The version the step was planned with; the file as it is only for snapshots that name no version.
    if (codeHash) return importVersion(file, codeHash);
    // tsx's hooks first (ours run before theirs), and settled before the check, so two calls register ours once.
    await allowTypeScriptImports();
    if (!hooks) {
      const { port1, port2 } = new MessageChannel();
      const roots = new Set(definitionsDir ? [rootUrl(definitionsDir)] : []);
      register(new URL("./worker-hooks.mjs", import.meta.url).href, {
        parentURL: import.meta.url,
        data: { sdkUrl: SDK_URL, roots: [...roots], port: port2 },
        transferList: [port2],
      });
      port1.unref();
      const state = { port: port1, roots, nextId: 0, acks: new Map<number, () => void>() };
      port1.on("message", (message: { type: string; id: number }) => {
        if (message.type !== "root-added") return;
        state.acks.get(message.id)?.();
        state.acks.delete(message.id);
      });
      hooks = state;
    }
    const h = hooks;
    const fileUrl = pathToFileURL(file).href;
    if (![...h.roots].some((root) => fileUrl.startsWith(root))) {
      const url = rootUrl(path.dirname(file));
      h.roots.add(url);
      const id = h.nextId++;
      await new Promise<void>((resolve) => {
        h.acks.set(id, resolve);
        h.port.ref();
        h.port.postMessage({ type: "add-root", id, url });
      }).finally(() => {
        if (h.acks.size === 0) h.port.unref();
      });
    }
    return (await import(fileUrl)) as Record<string, unknown>;
  };
}
