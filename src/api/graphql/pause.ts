// pauseAutomation / resumeAutomation, and the pause state behind Asset.paused.
import { z } from "zod";
import type { GraphQLResolveInfo } from "graphql";
import type { AssetPauseState, PauseTarget } from "../../storage/index.js";
import type { SnapshotAsset } from "../../graph/index.js";
import { batched, perContext } from "./batch.js";
import { builder } from "./builder.js";
import type { ApiServices } from "../services.js";
import { parseInput } from "./errors.js";
import { readAhead, readAheadOf, selectedOnItems } from "./read-ahead.js";

const AutomationPauseRef = builder.objectRef<AssetPauseState>("AutomationPauseState").implement({
  description: "An asset a pauseAutomation or resumeAutomation call targeted, and its state afterwards",
  fields: (t) => ({
    assetKey: t.exposeString("assetKey"),
    group: t.exposeString("group", { nullable: true }),
    paused: t.exposeBoolean("paused"),
    pausedAt: t.field({ type: "DateTime", nullable: true, resolve: (s) => s.pausedAt }),
    changed: t.exposeBoolean("changed", { description: "false when it already was in the requested state" }),
  }),
});

const PauseAutomationInput = builder.inputType("PauseAutomationInput", {
  fields: (t) => ({
    assetKeys: t.stringList({ description: "Assets to target" }),
    group: t.string({ description: "Also every asset of this group" }),
  }),
});

const pauseInput = z.strictObject({
  assetKeys: z.array(z.string().min(1, "must not be empty")).max(10_000, "at most 10 000 keys per call").optional(),
  group: z.string().min(1, "must not be empty").optional(),
});

function parseTarget(field: string, input: unknown): PauseTarget {
  return parseInput(pauseInput, input, field);
}

builder.mutationFields((t) => ({
  pauseAutomation: t.field({
    type: [AutomationPauseRef],
    description:
      "Stops automation and schedules from starting runs for these assets (and/or every asset of a group). " +
      "Runs already started, manual runs and backfills are not affected",
    args: { input: t.arg({ type: PauseAutomationInput, required: true }) },
    // TributaryErrors reach the client with their code (see maskError in app.ts).
    resolve: (_root, args, ctx) => ctx.automation.pause(parseTarget("pauseAutomation", args.input), ctx.guard),
  }),
  resumeAutomation: t.field({
    type: [AutomationPauseRef],
    description: "Lets automation and schedules start runs for these assets again; each follows its catchup setting",
    args: { input: t.arg({ type: PauseAutomationInput, required: true }) },
    resolve: (_root, args, ctx) => ctx.automation.resume(parseTarget("resumeAutomation", args.input), ctx.guard),
  }),
}));

/** Pause state of an asset; sibling assets of one query share one lookup. */
const pauseStateOf = perContext((ctx: Pick<ApiServices, "automation">) =>
  batched((keys: string[]) => ctx.automation.pauses.pauseStates(keys)),
);

type PauseState = { paused: boolean; pausedAt: Date | null } | undefined;

/** Reads the pause state of a list of assets with the list when the query asks for `paused` or `pausedAt` on them. */
export async function readPausesAhead(
  assets: readonly SnapshotAsset[],
  ctx: Pick<ApiServices, "automation">,
  info: GraphQLResolveInfo,
): Promise<void> {
  if (selectedOnItems(info, "paused").length === 0 && selectedOnItems(info, "pausedAt").length === 0) return;
  await readAhead(ctx, "pause", assets, async () => {
    const states = await ctx.automation.pauses.pauseStates(assets.map((a) => a.key));
    return new Map(assets.map((a) => [a, states.get(a.key)]));
  });
}

/** `f` of an asset's pause state (undefined: never paused): at once when it was read with its list. */
export function withPauseState<T>(asset: SnapshotAsset, ctx: Pick<ApiServices, "automation">, f: (state: PauseState) => T): T | Promise<T> {
  const ahead = readAheadOf<PauseState>(ctx, "pause", asset);
  return ahead ? f(ahead.value) : pauseStateOf(ctx)(asset.key).then(f);
}
