import cliProgress from "cli-progress";
import pc from "picocolors";
import type { RunDetail, RunSummary } from "../storage/index.js";
import { printJson } from "./output.js";
import { printRun } from "./run-format.js";
import { connectRuns, requireRun, type RunsClient } from "./runs-client.js";
import type { Settings } from "./settings.js";

const TERMINAL = new Set(["success", "failed", "canceled"]);

export interface FollowOptions {
  readonly wait: boolean;
  readonly json: boolean;
  readonly processes: number | undefined;
}

/**
 * What `materialize` and `clear` share: connect (server or in-process), start
 * a run, and with --wait (always, in-process: nothing else would run it) show
 * progress until it ends; exit code 0 only if it succeeded (or, when the start
 * says what it asked for, if that succeeded); Ctrl-C cancels.
 */
export async function startAndFollow(
  settings: Settings,
  options: FollowOptions,
  start: (client: RunsClient) => Promise<{ run: RunSummary; extra?: Record<string, unknown>; succeeded?: (final: RunDetail) => boolean }>,
): Promise<void> {
  const client = await connectRuns(settings, { execute: true, ...(options.processes ? { processes: options.processes } : {}) });
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once("SIGINT", onSignal);
  try {
    const { run, extra = {}, succeeded = (final: RunDetail) => final.status === "success" } = await start(client);
    const wait = options.wait || client.where === "in-process";
    if (!wait) {
      if (options.json) printJson({ ok: true, run, ...extra });
      else process.stdout.write(`run ${run.id} started: ${run.stepsTotal} step(s); follow it with \`tributary run ${run.id}\`\n`);
      return;
    }
    if (!options.wait && !options.json) process.stderr.write(pc.dim("no server is running: executing the run in this process\n"));
    const final = await waitForRun(client, run, {
      progress: !options.json && process.stderr.isTTY === true,
      interrupted: () => interrupted,
    });
    const ok = final.status !== "canceled" && succeeded(final);
    if (options.json) printJson({ ok, run: final, ...extra });
    else printRun(final);
    process.exitCode = ok ? 0 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    await client.close();
  }
}

/** Polls until the run ends, drawing steps done/failed/running; the first Ctrl-C cancels the run. */
function waitForRun(client: RunsClient, run: RunSummary, options: { progress: boolean; interrupted: () => boolean }): Promise<RunDetail> {
  return pollUntilEnded(
    "steps",
    run,
    async () => {
      const detail = requireRun(await client.get(run.id), run.id);
      const counts = { ok: 0, failed: 0, running: 0 };
      for (const s of detail.steps) {
        if (s.state === "success") counts.ok++;
        else if (s.state === "failed" || s.state === "upstream_failed") counts.failed++;
        else if (s.state === "running" || s.state === "queued") counts.running++;
      }
      return { value: detail, counts };
    },
    () => client.cancel(run.id),
    options,
  );
}

/**
 * The `--wait` loop of run-following commands: reads the run (backing off from 50 to 500 ms), draws the
 * progress bar on a terminal, returns once the run ended; the first Ctrl-C cancels the run.
 */
export async function pollUntilEnded<T extends { readonly status: string; readonly stepsDone: number }>(
  unit: string,
  run: { readonly stepsTotal: number },
  read: () => Promise<{ value: T; counts: { ok: number; failed: number; running: number } }>,
  cancel: () => Promise<unknown>,
  options: { progress: boolean; interrupted: () => boolean },
): Promise<T> {
  const bar = options.progress ? progressBar(unit) : undefined;
  bar?.start(run.stepsTotal, 0, { ok: 0, failed: 0, running: 0 });
  let canceled = false;
  try {
    for (let delay = 50; ; delay = Math.min(500, delay * 1.5)) {
      const { value, counts } = await read();
      bar?.update(value.stepsDone, counts);
      if (TERMINAL.has(value.status)) return value;
      if (options.interrupted() && !canceled) {
        canceled = true;
        process.stderr.write("\ncanceling the run (Ctrl-C)…\n");
        await cancel();
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  } finally {
    bar?.stop();
  }
}

/**
 * The live progress bar of `--wait` (on stderr): value/total `unit`, then the
 * ok, failed and running counts passed to update(). Runs and backfills share it.
 */
export function progressBar(unit: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      format: `${pc.cyan("{bar}")} {value}/{total} ${unit} | ${pc.green("{ok} ok")} | ${pc.red("{failed} failed")} | {running} running | {duration_formatted}`,
      hideCursor: true,
      stream: process.stderr,
    },
    cliProgress.Presets.shades_classic,
  );
}
