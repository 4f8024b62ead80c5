import type { RunDetail } from "../../storage/index.js";
import { startAndFollow } from "../follow-run.js";
import { InputError } from "../../errors/index.js";
import { positiveInt, wholeNumber } from "../options.js";
import { requireRun } from "../runs-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { ClearOptions } from "./clear.js";

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
      downstream: opts.downstream,
      onlyFailed: opts.onlyFailed,
    });
    const cleared = clearedOf(requireRun(await client.get(run.id), run.id));
    if (!opts.json) {
      for (const c of cleared) {
        const sample = c.sample.filter((k) => k !== "").map((k) => `"${k}"`).join(", ");
        process.stderr.write(`cleared ${c.count} partition(s) of "${c.assetKey}"${sample ? `: ${sample}${c.count > c.sample.length ? ", …" : ""}` : ""}\n`);
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
    throw new InputError("--run and --map-index go together: the run, and the mapped step of it to run again", { code: "CLI_USAGE", location: { field: opts.run === undefined ? "--run" : "--map-index" } });
  }
  const conflicting = (["from", "to", "downstream", "onlyFailed"] as const).find((o) => opts[o] !== undefined);
  if (conflicting) {
    const flag = `--${conflicting.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    throw new InputError(`${flag} does not apply to one mapped step (--run with --map-index): the steps after it in the run always run again`, {
      code: "CLI_USAGE",
      location: { field: flag },
    });
  }
  const mapIndex = wholeNumber(opts.mapIndex, "--map-index");
  await startAndFollow(settings, { wait: Boolean(opts.wait), json: Boolean(opts.json), processes }, async (client) => {
    const run = await client.clearMappedStep({ runId: opts.run!, assetKey: key, partitionKey: opts.partition ?? "", mapIndex });
    if (!opts.json) process.stderr.write(`cleared mapped step ${mapIndex} of "${key}"${opts.partition ? ` partition "${opts.partition}"` : ""} in run ${run.id}\n`);
    return { run, extra: { mapIndex } };
  });
}
