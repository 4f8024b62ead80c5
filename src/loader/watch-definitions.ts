import path from "node:path";
import os from "node:os";
import { watch } from "chokidar";
import type { PreviousDefinitions } from "../graph/index.js";
import { discoverDefinitionFiles } from "./discover-files.js";
import {
  assembleResult,
  loadDefinitions,
  loadFiles,
  type FileLoadResult,
  type LoadDefinitionsOptions,
  type LoadDefinitionsResult,
  type PreviousLoad,
} from "./load-definitions.js";

/** Files a definitions file may import. */
const IMPORTABLE = /\.(?:[cm]?[jt]s|[jt]sx|json)$/;

/**
 * `previous`, as in loadDefinitions, lets the first load import the files while storage is still opening; given, it
 * stands in for `previousGood` and `previousOwners`.
 */
export interface WatchDefinitionsOptions extends Omit<LoadDefinitionsOptions, "dir" | "only"> {
  /** Quiet time after the last file event before reloading; default 150 ms. */
  readonly debounceMs?: number;
  /** Called when a reload pass or `onChange` itself fails; the watcher keeps going. */
  readonly onError?: (err: unknown) => void;
}

export interface DefinitionsChange {
  /** Every current file's latest result, and the snapshot built from all of them. */
  readonly result: LoadDefinitionsResult;
  /** Files imported in this pass (all of them on the initial load). */
  readonly reloaded: readonly string[];
  /** Files that disappeared since the last pass. */
  readonly removed: readonly string[];
  readonly initial: boolean;
}

export interface DefinitionsWatcher {
  /** Resolves once the initial load was delivered to onChange and the watcher is listening. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Loads the definitions, then reloads on every change under `dir`
 * (debounced) and calls `onChange` with the new snapshot.
 *
 * What is reloaded: the changed files, plus every file that imported one of
 * them — compiling a file lists the local files it pulls in, so an edit
 * to a shared helper or an upstream definitions file reloads exactly its
 * dependents. When a file is added, files that are failing are retried too
 * (they may have been missing it). Unchanged files keep their results, and
 * each file's last good definitions keep standing in for it while it fails.
 * A key that another file defines again stays with the file it was loaded
 * from; the other file's definition is the one in error.
 * @example
 * // given store: { save(result: LoadDefinitionsResult): Promise<void> }
 * const watcher = watchDefinitions("asset-definitions", async ({ result }) => store.save(result));
 * await watcher.ready;
 */
export function watchDefinitions(
  dir: string,
  onChange: (change: DefinitionsChange) => void | Promise<void>,
  options: WatchDefinitionsOptions = {},
): DefinitionsWatcher {
  const root = path.resolve(dir);
  const debounceMs = options.debounceMs ?? 150;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? os.availableParallelism()));
  const results = new Map<string, FileLoadResult>();
  const lastGood = new Map<string, PreviousDefinitions>(options.previousGood ?? []);
  // Where each key was loaded from: a key whose definition later fails validation keeps its entry,
  // so a copy of it added meanwhile still does not take it over.
  const owners = new Map<string, string>(options.previousOwners ?? []);
  const rememberOwners = (result: LoadDefinitionsResult): void => {
    for (const a of result.snapshot.assets) owners.set(a.key, a.file);
  };
  const changed = new Set<string>();
  let added = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  let initialDone = false;

  const report = (err: unknown): void => {
    if (options.onError) options.onError(err);
  };

  const remember = (files: readonly FileLoadResult[]): void => {
    for (const f of files) {
      results.set(f.file, f);
      if (f.status === "ok") lastGood.set(f.file, { assets: f.assets, checks: f.checks });
    }
  };

  const pass = async (): Promise<void> => {
    const started = performance.now();
    const touched = new Set(changed);
    const sawAdd = added;
    changed.clear();
    added = false;
    const current = new Set(await discoverDefinitionFiles(root));
    const removed = [...results.keys()].filter((f) => !current.has(f));
    const reload = new Set([...touched].filter((f) => current.has(f)));
    for (const f of current) if (!results.has(f)) reload.add(f);
    const trigger = new Set([...touched, ...removed]);
    for (const r of results.values()) {
      if (!current.has(r.file)) continue;
      if (r.imports.some((i) => trigger.has(i))) reload.add(r.file);
      if (sawAdd && r.status === "error") reload.add(r.file);
    }
    for (const f of removed) {
      results.delete(f);
      lastGood.delete(f);
    }
    if (reload.size === 0 && removed.length === 0) return;
    const loaded = await loadFiles(root, [...reload].sort(), { ...options, concurrency });
    if (closed) return;
    remember(loaded);
    const files = [...results.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    const result = assembleResult(root, files, [], { previousGood: lastGood, previousOwners: owners }, concurrency, started);
    rememberOwners(result);
    await onChange({ result, reloaded: loaded.map((f) => f.file), removed: removed.sort(), initial: false });
  };

  const schedule = (): void => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      // The initial load or a running pass reschedules when it ends.
      if (running || !initialDone) return;
      running = pass()
        .catch(report)
        .finally(() => {
          running = undefined;
          if (changed.size > 0 || added) schedule();
        });
    }, debounceMs);
  };

  const watcher = watch(root, {
    ignoreInitial: true,
    ignored: (p: string) => {
      const rel = path.relative(root, p);
      return rel !== "" && rel.split(path.sep).some((part) => part.startsWith(".") || part === "node_modules");
    },
  });
  const onEvent = (event: "add" | "change" | "unlink", p: string): void => {
    const rel = path.relative(root, p).split(path.sep).join("/");
    // A new module (a definitions file or a helper) may be what a failing file was missing.
    if (event === "add" && IMPORTABLE.test(rel)) added = true;
    changed.add(rel);
    schedule();
  };
  watcher.on("add", (p) => onEvent("add", p));
  watcher.on("change", (p) => onEvent("change", p));
  watcher.on("unlink", (p) => onEvent("unlink", p));
  watcher.on("unlinkDir", (p) => onEvent("unlink", p));
  watcher.on("error", report);

  const ready = (async () => {
    await new Promise<void>((resolve) => watcher.once("ready", () => resolve()));
    // What the last load left, known once storage answers: the files are imported meanwhile.
    const previous: PromiseLike<PreviousLoad> | undefined = options.previous?.then((p) => {
      for (const [file, definitions] of p.previousGood) lastGood.set(file, definitions);
      for (const [key, file] of p.previousOwners) owners.set(key, file);
      return { previousGood: lastGood, previousOwners: owners };
    });
    const first = await loadDefinitions({ ...options, dir: root, concurrency, previousOwners: owners, ...(previous ? { previous } : {}) });
    remember(first.files);
    rememberOwners(first);
    initialDone = true;
    await onChange({ result: first, reloaded: first.files.map((f) => f.file), removed: [], initial: true });
    // Changes made during the initial load are picked up now.
    if (changed.size > 0 || added) schedule();
  })();
  ready.catch(report);

  return {
    ready,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await watcher.close();
      await running;
    },
  };
}
