import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { SerializedError } from "../errors/index.js";
import {
  buildSnapshot,
  type DefinitionsSnapshot,
  type FileDefinitions,
  type GraphProblem,
  type PreviousDefinitions,
  type SnapshotAsset,
  type SnapshotCheck,
} from "../graph/index.js";
import type { LoadRequest } from "./child-protocol.js";
import { childRuntime, type ChildRuntime } from "./child-runtime.js";
import { compileDefinitions, type CompiledDefinitions, type CompiledFile } from "./compile-definitions.js";
import { discoverDefinitionFiles } from "./discover-files.js";
import { LoaderChild, type ChildOutcome } from "./load-in-child.js";

export interface LoadDefinitionsOptions {
  /** The definitions directory. */
  readonly dir: string;
  /** Time limit per file, from the moment its import starts; default 60 s. */
  readonly timeoutMs?: number;
  /** Heap limit per child process, in MB; default 512. */
  readonly memoryMb?: number;
  /** Files imported at once (one child process each); default os.availableParallelism(). */
  readonly concurrency?: number;
  /**
   * Each file's definitions at its last good load (from storage). A file that
   * fails now keeps its previous assets in the snapshot; with `only`, files
   * not reloaded contribute these as they are.
   */
  readonly previousGood?: ReadonlyMap<string, PreviousDefinitions>;
  /** Reload only these files (relative to `dir`); every other file is taken from `previousGood`. */
  readonly only?: readonly string[];
  /**
   * Asset key → the file it was loaded from at the last load (from storage).
   * When a key is defined in more than one file, the definition in this file
   * stays and the others are in error; without an entry, none is loaded.
   */
  readonly previousOwners?: ReadonlyMap<string, string>;
  /**
   * `previousGood` and `previousOwners` still being read (from storage that is starting): the files are imported
   * meanwhile, and the snapshot is assembled once both are known. Given, it stands in for the two options.
   */
  readonly previous?: PromiseLike<PreviousLoad>;
}

/** What the last load left: see LoadDefinitionsOptions.previousGood and previousOwners. */
export interface PreviousLoad {
  readonly previousGood: ReadonlyMap<string, PreviousDefinitions>;
  readonly previousOwners: ReadonlyMap<string, string>;
}

/** The outcome of importing one definitions file. */
export interface FileLoadResult {
  /** Relative to the definitions directory, `/`-separated. */
  readonly file: string;
  /** sha256 (hex) of the file's bytes. */
  readonly sourceHash: string;
  readonly status: "ok" | "error";
  /** The file's own exported assets (empty on error). */
  readonly assets: SnapshotAsset[];
  readonly checks: SnapshotCheck[];
  /** Not errors: no definitions exported, a re-export that is not counted here… */
  readonly warnings: string[];
  readonly error?: SerializedError;
  /** From the start of the import to its outcome. */
  readonly loadMs: number;
  /** Other files under the definitions directory that this file imported (transitively), for watch mode. */
  readonly imports: string[];
  /** Custom trigger kinds the file exports: the triggerer imports the files that have some (0 on error). */
  readonly triggerKinds: number;
}

export interface LoadDefinitionsResult {
  /** The definitions directory, absolute. */
  readonly dir: string;
  /** One result per loaded file, sorted by file. */
  readonly files: FileLoadResult[];
  /** The active asset graph (see buildSnapshot). */
  readonly snapshot: DefinitionsSnapshot;
  readonly contentHash: string;
  readonly problems: GraphProblem[];
  /** Files that failed and whose last good definitions stand in for them. */
  readonly fallbackFiles: string[];
  readonly concurrency: number;
  readonly totalMs: number;
}

export const DEFAULT_LOAD_TIMEOUT_MS = 60_000;
export const DEFAULT_LOAD_MEMORY_MB = 512;
/** A file still importing after this long no longer counts against `concurrency`. */
const STRAGGLER_MS = 2_000;
/** A child process imports at most this many files… */
const FILES_PER_CHILD = 64;
/** …and none once its heap holds more than this share of its limit: what files leave behind stays in memory. */
const CHILD_HEAP_SHARE = 0.5;

/**
 * Imports every definitions file under `dir` in child processes, each file
 * with a time limit and every process with a memory limit, and assembles the snapshot. A file that fails
 * (syntax, exception, timeout, memory) gets an error of its own and never
 * delays or breaks the others. Independent of storage: the caller persists.
 * @example
 * const { files, snapshot, contentHash, problems } = await loadDefinitions({ dir: "asset-definitions" });
 */
export async function loadDefinitions(options: LoadDefinitionsOptions): Promise<LoadDefinitionsResult> {
  const started = performance.now();
  const dir = path.resolve(options.dir);
  const discovered = await discoverDefinitionFiles(dir);
  const only = options.only ? new Set(options.only.map(toPosix)) : undefined;
  const toLoad = only ? discovered.filter((f) => only.has(f)) : discovered;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? os.availableParallelism()));
  const files = await loadFiles(dir, toLoad, { ...options, concurrency });
  const { previousGood, previousOwners } = options.previous
    ? await options.previous
    : { previousGood: options.previousGood ?? new Map<string, PreviousDefinitions>(), previousOwners: options.previousOwners ?? new Map() };
  // Files not reloaded stand as they were at their last good load.
  const untouched = only
    ? discovered.filter((f) => !only.has(f) && previousGood.has(f)).map((f) => asFileDefinitions(f, previousGood.get(f)!))
    : [];
  return assembleResult(dir, files, untouched, { previousGood, previousOwners }, concurrency, started);
}

/** The files of a load that export custom trigger kinds: those the triggerer imports for them. */
export function triggerKindFiles(files: readonly Pick<FileLoadResult, "file" | "triggerKinds">[]): string[] {
  return files.filter((f) => f.triggerKinds > 0).map((f) => f.file);
}

/** The snapshot for a set of per-file results; shared by loadDefinitions and watch mode. */
export function assembleResult(
  dir: string,
  files: FileLoadResult[],
  untouched: readonly FileDefinitions[],
  previous: { previousGood: ReadonlyMap<string, PreviousDefinitions>; previousOwners: ReadonlyMap<string, string> },
  concurrency: number,
  started: number,
): LoadDefinitionsResult {
  const built = buildSnapshot([...files, ...untouched], previous.previousGood, previous.previousOwners);
  return {
    dir,
    files,
    snapshot: built.graph,
    contentHash: built.contentHash,
    problems: built.problems,
    fallbackFiles: built.fallbackFiles,
    concurrency,
    totalMs: performance.now() - started,
  };
}

/**
 * Imports the given files (relative to `dir`) in child processes, `concurrency`
 * at a time. The files are compiled first, all at once (see
 * compileDefinitions), so a child only loads plain JavaScript: node, the
 * child runtime and compiled files. A file that does not compile gets its
 * error without a child.
 *
 * A child imports file after file while each import ends cleanly (an error the
 * import itself throws included), up to FILES_PER_CHILD files or
 * CHILD_HEAP_SHARE of its heap. A file whose import crashes the process, times
 * out, or fails outside its own promise ends that process; when the process had
 * imported other files first, a crash or such a failure is tried again in a
 * fresh process, so that what an earlier file left running is never blamed on
 * it.
 */
export async function loadFiles(
  dir: string,
  relFiles: readonly string[],
  options: { timeoutMs?: number; memoryMb?: number; concurrency?: number } = {},
): Promise<FileLoadResult[]> {
  const limits = {
    timeoutMs: options.timeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS,
    memoryMb: options.memoryMb ?? DEFAULT_LOAD_MEMORY_MB,
  };
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? os.availableParallelism()));
  const results: FileLoadResult[] = [];
  if (relFiles.length === 0) return results;
  let runtime: ChildRuntime;
  let compiled: CompiledDefinitions;
  try {
    [runtime, compiled] = await Promise.all([childRuntime(), compileDefinitions(path.resolve(dir), relFiles)]);
  } catch (err) {
    // No cache directory to write to, or an SDK source that does not compile: every file fails
    // alike, so each keeps its last good definitions.
    const why = err instanceof Error ? err.message : String(err);
    return Promise.all(
      [...relFiles].sort().map(async (rel) => ({
        file: rel,
        sourceHash: await hashFile(path.resolve(dir, rel)),
        assets: [],
        checks: [],
        warnings: [],
        imports: [],
        triggerKinds: 0,
        ...failed(
          0,
          "LOAD_CHILD_FAILED",
          `${rel}: the loader could not prepare the child processes that import definitions files: ${why}`,
          rel,
        ),
      })),
    );
  }
  const pending = [...relFiles];
  // A lane loads files one after another, in a child process of its own. When
  // a file takes longer than STRAGGLER_MS (stuck, or waiting on the network),
  // a new lane starts and the slow one ends with its file: slow files do not
  // hold up the rest (at most `concurrency` of them at a time get this, so a
  // directory of hanging files stays bounded).
  const lanes: Promise<void>[] = [];
  let stragglers = 0;
  const lane = async (): Promise<void> => {
    const children = new ChildSupply(runtime, limits);
    try {
      for (let rel = pending.shift(); rel !== undefined; rel = pending.shift()) {
        let straggling = false;
        const timer = setTimeout(() => {
          if (stragglers >= concurrency || pending.length === 0) return;
          straggling = true;
          stragglers++;
          lanes.push(lane());
        }, STRAGGLER_MS);
        results.push(await loadOne(compiled.dir, rel, compiled.files.get(rel)!, children));
        clearTimeout(timer);
        if (straggling) {
          stragglers--;
          return;
        }
      }
    } finally {
      children.close();
    }
  };
  for (let i = 0; i < Math.min(concurrency, pending.length); i++) lanes.push(lane());
  // Lanes may start more lanes while we wait.
  for (let i = 0; i < lanes.length; i++) await lanes[i];
  return results.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/** A lane's child process: kept while it serves well, replaced when it does not. */
class ChildSupply {
  #child: LoaderChild | undefined;

  constructor(
    readonly runtime: ChildRuntime,
    readonly limits: { readonly timeoutMs: number; readonly memoryMb: number },
  ) {}

  /** Imports one file, in a fresh process again when it failed in one that had imported other files. */
  async load(request: LoadRequest): Promise<ChildOutcome> {
    // A child kept after a load has imported other files before this one.
    const reused = this.#child?.usable === true;
    const outcome = await this.#take().load(request);
    this.#retire();
    const unclean = outcome.kind === "exit" || outcome.kind === "not-started" || (outcome.kind === "reply" && outcome.reply.unhandled);
    return reused && unclean
      ? this.#take()
          .load(request)
          .finally(() => this.#retire())
      : outcome;
  }

  close(): void {
    this.#child?.close();
    this.#child = undefined;
  }

  #take(): LoaderChild {
    if (!this.#child?.usable) {
      this.#child?.close();
      this.#child = new LoaderChild(this.runtime, this.limits);
    }
    return this.#child;
  }

  /** Ends the child when it cannot or should not take another file. */
  #retire(): void {
    const child = this.#child;
    if (!child) return;
    if (!child.usable || child.filesLoaded >= FILES_PER_CHILD || child.heapMb > this.limits.memoryMb * CHILD_HEAP_SHARE) this.close();
  }
}

async function loadOne(dir: string, rel: string, compiled: CompiledFile, children: ChildSupply): Promise<FileLoadResult> {
  const abs = path.join(dir, ...rel.split("/"));
  const sourceHash = hashFile(abs);
  const base = { file: rel, assets: [], checks: [], warnings: [], imports: [...compiled.imports], triggerKinds: 0 };
  if (compiled.status === "error") return { ...base, sourceHash: await sourceHash, status: "error", loadMs: 0, error: compiled.error };
  const outcome = await children.load({ bundle: compiled.bundle, tls: compiled.tls, file: abs, relFile: rel, dir });
  return { ...base, ...fromOutcome(rel, outcome, children.limits, compiled.codeHash), sourceHash: await sourceHash };
}

function fromOutcome(
  rel: string,
  outcome: ChildOutcome,
  limits: { timeoutMs: number; memoryMb: number },
  /** Which code the workers run for these definitions (see compiledCode). */
  codeHash: string,
): Pick<FileLoadResult, "status" | "loadMs"> & Partial<Pick<FileLoadResult, "assets" | "checks" | "warnings" | "error" | "triggerKinds">> {
  switch (outcome.kind) {
    case "reply": {
      const r = outcome.reply;
      const result = {
        status: r.status,
        assets: r.assets.map(({ exportName, spec }) => ({ ...spec, file: rel, exportName, codeHash })),
        checks: r.checks.map(({ exportName, spec }) => ({ ...spec, file: rel, exportName, codeHash })),
        warnings: [...r.warnings],
        triggerKinds: r.triggerKinds ?? 0,
        loadMs: outcome.ms,
      };
      return r.error ? { ...result, error: r.error } : result;
    }
    case "not-started":
      return failed(0, "LOAD_CHILD_FAILED", `${rel}: the loader could not start a child process to import it: ${outcome.reason}`, rel);
    case "timeout":
      return failed(
        outcome.ms,
        "LOAD_TIMEOUT",
        `${rel}: importing the file took longer than the load time limit of ${formatMs(limits.timeoutMs)}, so it was stopped. ` +
          `Definitions files should only declare assets: move slow work (network calls, large computations, waiting) ` +
          `into asset functions, or raise the limit with --load-timeout (e.g. --load-timeout ${suggestLimit(limits.timeoutMs)})`,
        rel,
      );
    case "exit": {
      if (/heap out of memory|Reached heap limit|Allocation failed|ERR_WORKER_OUT_OF_MEMORY/i.test(outcome.stderr)) {
        return failed(
          outcome.ms,
          "LOAD_OUT_OF_MEMORY",
          `${rel}: importing the file needed more than the ${limits.memoryMb} MB memory limit of a loader process, so it was stopped; ` +
            `definitions files should only declare assets — move large data into asset functions`,
          rel,
        );
      }
      const how = outcome.signal ? `was killed by ${outcome.signal}` : `exited with code ${outcome.code}`;
      const tail = outcome.stderr.trim().split("\n").slice(-15).join("\n");
      return failed(
        outcome.ms,
        "LOAD_CRASHED",
        `${rel}: the loader process ${how} before the file finished loading` +
          ` (does the file call process.exit() or crash the process at import?)${tail ? `:\n${tail}` : ""}`,
        rel,
      );
    }
  }
}

/** sha256 (hex) of a file's bytes; "" when it cannot be read. */
function hashFile(file: string): Promise<string> {
  return readFile(file).then(
    (bytes) => createHash("sha256").update(bytes).digest("hex"),
    () => "",
  );
}

function failed(loadMs: number, code: string, message: string, file: string): Pick<FileLoadResult, "status" | "error" | "loadMs"> {
  return { status: "error", loadMs, error: loadError(code, message, file) };
}

function loadError(code: string, message: string, file: string): SerializedError {
  return { name: "LoadError", code, message, location: { file } };
}

function asFileDefinitions(file: string, prev: PreviousDefinitions): FileDefinitions {
  const assets = Array.isArray(prev) ? (prev as readonly SnapshotAsset[]) : (prev as { assets: readonly SnapshotAsset[] }).assets;
  const checks = Array.isArray(prev) ? [] : ((prev as { checks?: readonly SnapshotCheck[] }).checks ?? []);
  return { file, status: "ok", assets, checks };
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function suggestLimit(ms: number): string {
  return `${Math.max(2, Math.ceil((ms * 2) / 1000))}s`;
}

function toPosix(p: string): string {
  return p.split(path.sep).join("/");
}
