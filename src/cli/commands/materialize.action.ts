import { InputError } from "../../errors/index.js";
import { startAndFollow } from "../follow-run.js";
import { positiveInt } from "../options.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import { inFlags, parseDims } from "./dimension-option.js";
import type { MaterializeOptions } from "./materialize.js";

export async function runMaterialize(keys: string[], opts: MaterializeOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
  const maxActiveSteps = positiveInt(opts.maxActiveSteps, "--max-active-steps");
  const dimensions = parseDims(opts.dim);
  if (opts.all && (opts.partition !== undefined || opts.from !== undefined || opts.to !== undefined || dimensions)) {
    throw new InputError("--all selects every partition: leave out --partition, --from, --to and --dim");
  }
  if (dimensions && (opts.partition !== undefined || opts.from !== undefined || opts.to !== undefined)) {
    throw new InputError(
      "--dim selects partitions per dimension: leave out --partition, --from and --to (give the date range as --dim date=FIRST..LAST)",
    );
  }
  await startAndFollow(settings, { wait: Boolean(opts.wait), json: Boolean(opts.json), processes }, async (client) => {
    try {
      return {
        run: await client.launch({
          assetKeys: keys,
          partition: opts.partition,
          from: opts.from,
          to: opts.to,
          allPartitions: opts.all,
          dimensions,
          includeUpstream: opts.includeUpstream,
          maxActiveSteps,
        }),
      };
    } catch (err) {
      throw inFlags(err, "--partition <key>, a range --from <key> --to <key>, --all, or per dimension --dim <dimension=keys>");
    }
  });
}
