import type { RunDetail } from "../../storage/index.js";
import { startAndFollow } from "../follow-run.js";
import { positiveInt } from "../options.js";
import { requireRun } from "../runs-client.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { ClearOptions } from "./clear.js";

export async function runClear(key: string, opts: ClearOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
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
