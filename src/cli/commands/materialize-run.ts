import { InputError } from "../../errors/index.js";
import { startAndFollow } from "../follow-run.js";
import { positiveInt } from "../options.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { MaterializeOptions } from "./materialize.js";

export async function runMaterialize(keys: string[], opts: MaterializeOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
  const maxActiveSteps = positiveInt(opts.maxActiveSteps, "--max-active-steps");
  if (opts.all && (opts.partition !== undefined || opts.from !== undefined || opts.to !== undefined)) {
    throw new InputError("--all selects every partition: leave out --partition, --from and --to");
  }
  await startAndFollow(settings, { wait: Boolean(opts.wait), json: Boolean(opts.json), processes }, async (client) => ({
    run: await client.launch({
      assetKeys: keys,
      partition: opts.partition,
      from: opts.from,
      to: opts.to,
      allPartitions: opts.all,
      includeUpstream: opts.includeUpstream,
      maxActiveSteps,
    }),
  }));
}
