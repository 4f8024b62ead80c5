import type { RunDetail } from "../../storage/index.js";
import { startAndFollow } from "../follow-run.js";
import { InputError } from "../../errors/index.js";
import { positiveInt, wholeNumber } from "../options.js";
import { requireRun, type RunsClient, type RunView } from "../runs-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { ClearOptions } from "./clear.js";
import { parseDims } from "./dimension-option.js";

export async function runClear(key: string, opts: ClearOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
  if (opts.run !== undefined || opts.mapIndex !== undefined) {
    await clearMappedStep(key, opts, settings, processes);
    return;
  }
  await startAndFollow(settings, { wait: Boolean(opts.wait), json: Boolean(opts.json), processes }, async (client) => {
    const run = await client.clear({
      assetKey: key,
      partition: opts.partition,
      from: opts.from,
      to: opts.to,
      dimensions: parseDims(opts.dim),
      downstream: opts.downstream,
      onlyFailed: opts.onlyFailed,
    });
    const cleared = clearedOf(requireRun(await client.get(run.id), run.id));
    if (!opts.json) {
      for (const c of cleared) {
        const sample = c.sample
          .filter((k) => k !== "")
          .map((k) => `"${k}"`)
          .join(", ");
        process.stderr.write(
          `cleared ${c.count} partition(s) of "${c.assetKey}"${sample ? `: ${sample}${c.count > c.sample.length ? ", …" : ""}` : ""}\n`,
        );
      }
    }
    return { run, extra: { cleared } };
  });
}

/** Cleared partitions per asset, from the rerun's steps (the same on both clients). */
function clearedOf(run: RunDetail): { assetKey: string; count: number; sample: string[] }[] {
  const byAsset = new Map<string, string[]>();
  for (const s of run.steps) {
    const keys = byAsset.get(s.assetKey) ?? [];
    keys.push(s.partitionKey);
    byAsset.set(s.assetKey, keys);
  }
  return [...byAsset].map(([assetKey, keys]) => ({ assetKey, count: keys.length, sample: keys.slice(0, 5) }));
}

/** `--run R --map-index N`: one mapped step of run R runs again inside that run. */
async function clearMappedStep(key: string, opts: ClearOptions, settings: Settings, processes: number | undefined): Promise<void> {
  if (opts.run === undefined || opts.mapIndex === undefined) {
    throw new InputError("--run and --map-index go together: the run, and the mapped step of it to run again", {
      code: "CLI_USAGE",
      location: { field: opts.run === undefined ? "--run" : "--map-index" },
    });
  }
  const conflicting = (["from", "to", "dim", "downstream", "onlyFailed"] as const).find((o) => opts[o] !== undefined);
  if (conflicting) {
    const flag = `--${conflicting.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    throw new InputError(
      `${flag} does not apply to one mapped step (--run with --map-index): the steps after it in the run always run again`,
      {
        code: "CLI_USAGE",
        location: { field: flag },
      },
    );
  }
  const mapIndex = wholeNumber(opts.mapIndex, "--map-index");
  await startAndFollow(settings, { wait: Boolean(opts.wait), json: Boolean(opts.json), processes }, async (client) => {
    const partitionKey = opts.partition ?? (await mappedPartitionOf(client, opts.run!, key, mapIndex));
    const run = await client.clearMappedStep({ runId: opts.run!, assetKey: key, partitionKey, mapIndex });
    if (!opts.json)
      process.stderr.write(
        `cleared mapped step ${mapIndex} of "${key}"${partitionKey ? ` partition "${partitionKey}"` : ""} in run ${run.id}\n`,
      );
    // Judged by what ran again (the step and the steps after it): a failure elsewhere in the run is not this
    // command's, and is said, not counted.
    const succeeded = (final: RunDetail): boolean => {
      const rerun = rerunSteps(final, key, partitionKey, mapIndex);
      const ok = rerun.length > 0 && rerun.every((s) => s.state === "success" || s.state === "skipped");
      const elsewhere = final.steps.filter((s) => !rerun.includes(s) && (s.state === "failed" || s.state === "upstream_failed")).length;
      if (ok && elsewhere > 0 && !opts.json) {
        process.stderr.write(
          `the mapped step and the steps after it succeeded; run ${final.id} is still ${final.status}: ${elsewhere} other step(s) failed\n`,
        );
      }
      return ok;
    };
    return { run, extra: { mapIndex }, succeeded };
  });
}

/** The mapped step, its expanded step and every step after them in the run: what a clear of it runs again. */
function rerunSteps(run: RunDetail, assetKey: string, partitionKey: string, mapIndex: number): RunDetail["steps"][number][] {
  const at = (index: number) =>
    run.steps.find((s) => s.assetKey === assetKey && s.partitionKey === partitionKey && s.checkName === null && s.mapIndex === index);
  const reached = new Set([at(mapIndex), at(-1)].flatMap((s) => (s ? [s.id] : [])));
  for (let grew = true; grew;) {
    grew = false;
    for (const s of run.steps) {
      if (!reached.has(s.id) && s.upstream.some((u) => reached.has(u))) {
        reached.add(s.id);
        grew = true;
      }
    }
  }
  return run.steps.filter((s) => reached.has(s.id));
}

/**
 * Without --partition: the partition of the run whose fan-out of the asset has that map index, when there is
 * exactly one; several are refused, naming them. "" (unpartitioned) when the run has no fan-out of the asset, so
 * that the clear itself says what is missing.
 */
async function mappedPartitionOf(client: RunsClient, runId: string, assetKey: string, mapIndex: number): Promise<string> {
  const run = await client.get(runId);
  if (!run) return "";
  const fanOuts = run.steps.filter((s) => s.assetKey === assetKey && s.checkName === null && s.mapIndex === -1 && s.mapCount !== null);
  const withIndex = fanOuts.filter((s) => mapIndex < s.mapCount!);
  if (withIndex.length === 1) return withIndex[0]!.partitionKey;
  if (fanOuts.length === 0 || (fanOuts.length === 1 && fanOuts[0]!.partitionKey === "")) return fanOuts[0]?.partitionKey ?? "";
  const listed = (steps: readonly RunView["steps"][number][], withCounts: boolean) =>
    steps
      .slice(0, MAX_LISTED)
      .map((s) => `"${s.partitionKey}"${withCounts ? ` (map indices 0 to ${s.mapCount! - 1})` : ""}`)
      .join(", ") + (steps.length > MAX_LISTED ? `, … (${steps.length - MAX_LISTED} more)` : "");
  if (withIndex.length === 0) {
    throw new InputError(`no mapped step ${mapIndex} of "${assetKey}" in run ${runId}: its fan-outs are ${listed(fanOuts, true)}`, {
      code: "STEP_NOT_FOUND",
      location: { assetKey, field: "--map-index" },
    });
  }
  throw new InputError(
    `run ${runId} has mapped step ${mapIndex} of "${assetKey}" in ${withIndex.length} partitions: ${listed(withIndex, false)}; ` +
      `choose one with --partition`,
    { code: "CLI_USAGE", location: { assetKey, field: "--partition" } },
  );
}

/** Partitions named in one refusal; the rest are counted. */
const MAX_LISTED = 10;
