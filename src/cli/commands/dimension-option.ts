// `--dim date=2025-03-02..2025-03-08 --dim region=eu,us`: a selection per
// dimension of a multi-partitioned asset, for the commands that select partitions.
import { InputError, TributaryError } from "../../errors/index.js";
import type { DimensionSlice } from "../../planner/index.js";

export const DIM_FLAGS = "--dim <dimension=keys>";
export const DIM_HELP =
  "for a multi-partitioned asset: keys of one dimension, as a list (region=eu,us) or a range (date=2025-03-02..2025-03-08, an open end " +
  "is the first / latest); repeat per dimension; dimensions left out: all their keys";

/** Commander's collector: each --dim adds one value. */
export function collectDim(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The --dim values as dimension slices (undefined without any); InputError naming the bad value. */
export function parseDims(values: readonly string[] | undefined): DimensionSlice[] | undefined {
  if (values === undefined || values.length === 0) return undefined;
  return values.map((text) => {
    const eq = text.indexOf("=");
    const name = eq < 0 ? "" : text.slice(0, eq).trim();
    const spec = eq < 0 ? "" : text.slice(eq + 1).trim();
    if (name === "" || spec === "") {
      throw new InputError(`--dim: "${text}" is not dimension=keys; e.g. --dim region=eu,us or --dim date=2025-03-02..2025-03-08`, {
        code: "CLI_USAGE",
        location: { field: "--dim" },
      });
    }
    const dots = spec.indexOf("..");
    if (dots >= 0) {
      const from = spec.slice(0, dots).trim();
      const to = spec.slice(dots + 2).trim();
      if ((from === "" && to === "") || to.includes("..")) {
        throw new InputError(`--dim: "${text}" is not a range; write ${name}=FIRST..LAST (one end may be left open)`, {
          code: "CLI_USAGE",
          location: { field: "--dim" },
        });
      }
      return { name, ...(from ? { from } : {}), ...(to ? { to } : {}) };
    }
    const keys = spec.split(",").map((k) => k.trim());
    if (keys.some((k) => k === "")) {
      throw new InputError(`--dim: "${text}" has an empty key; separate keys with single commas`, {
        code: "CLI_USAGE",
        location: { field: "--dim" },
      });
    }
    return { name, keys };
  });
}

/**
 * The planner names what to choose in API terms (all, keys, a range from–to);
 * on the command line the message names the command's flags instead.
 */
export function inFlags(err: unknown, flags: string): unknown {
  if (!(err instanceof TributaryError) || err.code !== "PARTITION_SELECTION_REQUIRED") return err;
  const which = /^(.*?): choose the partitions/.exec(err.message)?.[1] ?? "the selected assets are partitioned";
  return new InputError(`${which}: choose the partitions with ${flags}`, {
    code: err.code,
    ...(err.location ? { location: err.location } : {}),
  });
}
