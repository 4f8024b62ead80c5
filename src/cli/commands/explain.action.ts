import { readFile } from "node:fs/promises";
import path from "node:path";
import pc from "picocolors";
import { GraphError, LoadError } from "../../errors/index.js";
import { AssetGraph, explainAsset, suggestKey, type AssetExplanation, type PartitionReads } from "../../graph/index.js";
import { loadDefinitions, type LoadDefinitionsResult } from "../../loader/index.js";
import { printJson } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { ExplainOptions } from "./explain.js";

/** The width of the label column of the human output. */
const LABEL = 13;

export async function runExplain(key: string, opts: ExplainOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  // The definitions as they are on disk, as `tributary check` loads them: no database, no server.
  const result = await loadDefinitions({ dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs });
  const graph = AssetGraph.fromSnapshot(result.snapshot);
  if (!graph.has(key)) throw await notExplained(key, graph, result);
  const explanation = explainAsset(graph, key, { now: new Date(), partition: opts.partition });
  if (opts.json) printJson({ ok: true, ...explanation });
  else process.stdout.write(`${formatExplanation(explanation)}\n`);
}

/**
 * Why a key has no definition to explain: its file failed to load, the graph left it out (a duplicate key, a cycle,
 * an unknown dependency), or no file defines it — then the nearest key is suggested.
 */
async function notExplained(key: string, graph: AssetGraph, result: LoadDefinitionsResult): Promise<Error> {
  const failed = result.files.filter((f) => f.status === "error");
  for (const f of failed) {
    if (f.error?.location?.assetKey !== key && !(await mentions(path.join(result.dir, f.file), key))) continue;
    return new LoadError(
      f.error?.code ?? "LOAD_FAILED",
      `asset "${key}" is defined in ${f.file}, which failed to load: ${f.error?.message ?? "unknown error"}`,
      { location: { file: f.file, assetKey: key } },
    );
  }
  const problem = result.problems.find((p) => p.assetKey === key && !p.checkName);
  if (problem) {
    return new GraphError(problem.code, `asset "${key}" is left out of the definitions: ${problem.message}`, {
      location: { ...(problem.file ? { file: problem.file } : {}), assetKey: key },
    });
  }
  const suggestion = suggestKey(key, graph.keys());
  const brokenFiles =
    failed.length === 0 ? "" : ` (${failed.length} file${failed.length === 1 ? "" : "s"} failed to load: run \`tributary check\`)`;
  return new GraphError(
    "GRAPH_UNKNOWN_ASSET",
    `no asset has the key "${key}" in ${result.dir}${suggestion === undefined ? "" : `; did you mean "${suggestion}"?`}${brokenFiles}`,
    { location: { assetKey: key } },
  );
}

/** Whether a definitions file names the key as a string literal. */
async function mentions(file: string, key: string): Promise<boolean> {
  const text = await readFile(file, "utf8").catch(() => "");
  return ['"', "'", "`"].some((q) => text.includes(`${q}${key}${q}`));
}

/** The explanation for people: a label column, then the dependencies, checks and readers as lists. */
export function formatExplanation(e: AssetExplanation): string {
  const out: string[] = [pc.bold(e.key)];
  const row = (label: string, value: string) => {
    const [first = "", ...rest] = value.split("\n");
    out.push(`${label.padEnd(LABEL)}${first}`);
    for (const line of rest) out.push(`${" ".repeat(LABEL)}${line}`);
  };
  row("kind", e.kind === "source" ? "source asset (observed, not materialised)" : "asset");
  row("file", `${e.file} (export ${e.exportName})`);
  row("group", e.group);
  if (e.owner) row("owner", e.owner);
  if (e.description) row("description", e.description);
  const tags = Object.entries(e.tags);
  if (tags.length > 0) row("tags", tags.map(([k, v]) => `${k}=${v}`).join(", "));
  const metadata = Object.keys(e.metadata);
  if (metadata.length > 0) row("metadata", JSON.stringify(e.metadata));
  row("partitions", e.partitions.spec === null ? e.partitions.words : `${e.partitions.words}\n${pc.dim(e.partitions.definition)}`);
  row(
    "automation",
    e.automation
      ? `${e.automation.words}\n${pc.dim(e.automation.condition)}`
      : e.kind === "source"
        ? "none (observed)"
        : "none: materialised on request",
  );
  for (const s of e.settings) row(s.name, s.value);

  out.push("");
  if (e.dependencies.length === 0) row("reads", "nothing");
  else {
    out.push("reads");
    if (e.examplePartitionNote) out.push(`  ${pc.dim(`(${e.examplePartitionNote})`)}`);
    for (const d of e.dependencies) {
      const mapping = d.mapping === null ? "no mapping" : `${d.mapping}${d.defaultMapping ? " (the default)" : ""}`;
      out.push(`  ${d.name}: ${pc.bold(d.assetKey)} through ${mapping}: ${d.mappingWords}`);
      if (d.problem) out.push(`    ${pc.yellow(d.problem)}`);
      if (d.reads) out.push(...readsLines(e.examplePartition, d.assetKey, d.reads).map((l) => `    ${l}`));
    }
  }

  out.push("");
  if (e.checks.length === 0) row("checks", "none");
  else {
    out.push("checks");
    for (const c of e.checks) {
      const how = [c.blocking ? "blocking" : "not blocking", ...(c.severity === "warn" ? ["severity warn"] : []), `on ${c.partitions}`];
      out.push(`  ${c.name}: ${how.join(", ")}${c.description ? pc.dim(` — ${c.description}`) : ""}`);
    }
  }

  out.push("");
  if (e.downstream.length === 0) row("read by", "nothing");
  else {
    out.push("read by");
    for (const d of e.downstream) {
      const mapping = d.mapping === null ? "no mapping" : `${d.mapping}${d.defaultMapping ? " (the default)" : ""}`;
      out.push(`  ${pc.bold(d.key)} as ${d.as}, through ${mapping}`);
    }
  }
  return out.join("\n");
}

/** `partition 2025-03-10 reads shop/raw_orders 2025-03-04 … 2025-03-10 (7 partitions)`, and what is missing. */
function readsLines(partition: string | null, upstream: string, r: PartitionReads): string[] {
  const who = partition === null ? "a materialisation" : `partition ${partition}`;
  let what: string;
  if (r.first === null || r.last === null) what = r.count === 0 ? `no partition of ${upstream}` : `${upstream} (the whole asset)`;
  else if (r.count === 1) what = `${upstream} ${r.first}`;
  else what = `${upstream} ${r.first} … ${r.last} (${r.count} partitions${r.ranges > 1 ? ` in ${r.ranges} runs` : ""})`;
  const lines = [`${who} reads ${what}`];
  if (r.missing.count > 0) lines.push(pc.yellow(`not there: ${r.missing.reasons.join("; ")}`));
  if (r.unknownDynamicSets.length > 0) {
    lines.push(pc.dim(`(keys of dynamic set ${r.unknownDynamicSets.map((n) => `"${n}"`).join(", ")} are only known to the database)`));
  }
  return lines;
}
