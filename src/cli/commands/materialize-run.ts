import cliProgress from "cli-progress";
import pc from "picocolors";
import { InputError } from "../../errors/index.js";
import type { RunDetail, RunSummary } from "../../storage/index.js";
import { positiveInt } from "../options.js";
import { printJson } from "../output.js";
import { connectRuns, requireRun, type RunsClient } from "../runs-client.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { MaterializeOptions } from "./materialize.js";
import { printRun } from "./runs-run.js";

const TERMINAL = new Set(["success", "failed", "canceled"]);

export async function runMaterialize(keys: string[], opts: MaterializeOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
  const maxActiveSteps = positiveInt(opts.maxActiveSteps, "--max-active-steps");
  if (opts.all && (opts.partition !== undefined || opts.from !== undefined || opts.to !== undefined)) {
    throw new InputError("--all selects every partition: leave out --partition, --from and --to");
  }
  const client = await connectRuns(settings, { execute: true, ...(processes ? { processes } : {}) });
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once("SIGINT", onSignal);
  try {
    const run = await client.launch({
      assetKeys: keys,
      partition: opts.partition,
      from: opts.from,
      to: opts.to,
      allPartitions: opts.all,
      includeUpstream: opts.includeUpstream,
      maxActiveSteps,
    });
    // In-process, nothing would execute the run after this command exits: wait regardless.
    const wait = opts.wait || client.where === "in-process";
    if (!wait) {
      if (opts.json) printJson({ ok: true, run });
      else process.stdout.write(`run ${run.id} started: ${run.stepsTotal} step(s); follow it with \`tributary run ${run.id}\`\n`);
      return;
    }
    if (!opts.wait && !opts.json) process.stderr.write(pc.dim("no server is running: executing the run in this process\n"));
    const final = await waitForRun(client, run, { progress: !opts.json && process.stderr.isTTY === true, interrupted: () => interrupted });
    if (opts.json) printJson({ ok: final.status === "success", run: final });
    else printRun(final);
    process.exitCode = final.status === "success" ? 0 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    await client.close();
  }
}

/** Polls until the run ends, drawing steps done/failed/running; Ctrl-C cancels the run. */
async function waitForRun(
  client: RunsClient,
  run: RunSummary,
  options: { progress: boolean; interrupted: () => boolean },
): Promise<RunDetail> {
  const bar = options.progress
    ? new cliProgress.SingleBar(
        {
          format: `${pc.cyan("{bar}")} {value}/{total} steps | ${pc.green("{ok} ok")} | ${pc.red("{failed} failed")} | {running} running | {duration_formatted}`,
          hideCursor: true,
          stream: process.stderr,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(run.stepsTotal, 0, { ok: 0, failed: 0, running: 0 });
  let canceled = false;
  try {
    for (let delay = 50; ; delay = Math.min(500, delay * 1.5)) {
      const detail = requireRun(await client.get(run.id), run.id);
      const counts = { ok: 0, failed: 0, running: 0 };
      for (const s of detail.steps) {
        if (s.state === "success") counts.ok++;
        else if (s.state === "failed" || s.state === "upstream_failed") counts.failed++;
        else if (s.state === "running" || s.state === "queued") counts.running++;
      }
      bar?.update(detail.stepsDone, counts);
      if (TERMINAL.has(detail.status)) return detail;
      if (options.interrupted() && !canceled) {
        canceled = true;
        process.stderr.write("\ncanceling the run (Ctrl-C)…\n");
        await client.cancel(run.id);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  } finally {
    bar?.stop();
  }
}
