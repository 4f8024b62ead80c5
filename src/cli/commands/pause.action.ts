import { localGuard } from "../../access/index.js";
import { InputError } from "../../errors/index.js";
import type { AssetPauseState, PauseTarget } from "../../storage/index.js";
import { printJson, table } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { PauseOptions } from "./pause.js";

type Verb = "pause" | "resume";

export async function runPause(verb: Verb, keys: readonly string[], opts: PauseOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  if (keys.length === 0 && !opts.group) {
    throw new InputError(`${verb}: name the assets to ${verb} (tributary ${verb} <asset-key…>) or a group (--group <name>)`, {
      code: "PAUSE_TARGET_REQUIRED",
    });
  }
  const target: PauseTarget = { ...(keys.length > 0 ? { assetKeys: keys } : {}), ...(opts.group ? { group: opts.group } : {}) };
  const url = await serverFor(settings);
  const assets = url ? await viaServer(url, verb, target) : await inProcess(settings, verb, target);
  if (opts.json) {
    printJson({ ok: true, paused: verb === "pause", assets: assets.map((a) => ({ ...a, pausedAt: a.pausedAt?.toISOString() ?? null })) });
    return;
  }
  const changed = assets.filter((a) => a.changed).length;
  const already = assets.length - changed;
  const done = verb === "pause" ? "paused" : "resumed";
  process.stdout.write(
    `${done} ${changed} asset(s)` + (already > 0 ? `; ${already} already ${verb === "pause" ? "paused" : "active"}` : "") + "\n",
  );
  process.stdout.write(
    `${table(
      ["asset", "group", "automation", "paused at (UTC)"],
      assets.map((a) => [a.assetKey, a.group ?? "", a.paused ? "paused" : "active", a.pausedAt?.toISOString() ?? ""]),
    )}\n`,
  );
}

async function inProcess(settings: Settings, verb: Verb, target: PauseTarget): Promise<AssetPauseState[]> {
  // The assets table follows the definitions: load them first, so a newly defined asset is known.
  // Loaded only without a server: the database, loader and executor would slow every command's start.
  const { withCurrentDefinitions } = await import("../runtime.js");
  return withCurrentDefinitions(settings, (api) =>
    verb === "pause" ? api.automation.pause(target, localGuard()) : api.automation.resume(target, localGuard()),
  );
}

async function viaServer(url: string, verb: Verb, target: PauseTarget): Promise<AssetPauseState[]> {
  const field = verb === "pause" ? "pauseAutomation" : "resumeAutomation";
  type Wire = { assetKey: string; group: string | null; paused: boolean; pausedAt: string | null; changed: boolean };
  const data = await graphql<Record<string, Wire[]>>(
    url,
    `mutation ($input: PauseAutomationInput!) { ${field}(input: $input) { assetKey group paused pausedAt changed } }`,
    { input: target },
  );
  return (data[field] ?? []).map((a) => ({ ...a, pausedAt: a.pausedAt ? new Date(a.pausedAt) : null }));
}
