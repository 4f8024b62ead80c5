import { InputError } from "../../errors/index.js";
import type { RunStatus } from "../../storage/index.js";
import { printJson, table } from "../output.js";
import { colorStatus, duration, printRun } from "../run-format.js";
import { connectRuns, requireRun } from "../runs-client.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";

const STATUSES: readonly RunStatus[] = ["queued", "running", "success", "failed", "canceled"];

export async function runRuns(opts: { status?: string; limit: string; json?: boolean }, globals: GlobalOptions): Promise<void> {
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new InputError(`--limit: "${opts.limit}" must be a whole number from 1 to 1000`);
  if (opts.status !== undefined && !STATUSES.includes(opts.status as RunStatus)) {
    throw new InputError(`--status: "${opts.status}" is not a run status; use one of ${STATUSES.join(", ")}`);
  }
  const client = await connectRuns(resolveSettings(globals));
  try {
    const runs = await client.list({ limit, ...(opts.status ? { status: opts.status as RunStatus } : {}) });
    if (opts.json) return printJson({ runs });
    if (runs.length === 0) return void process.stdout.write("no runs yet\n");
    process.stdout.write(
      `${table(
        ["run", "status", "origin", "steps", "created", "duration"],
        runs.map((r) => [r.id, colorStatus(r.status), r.origin, `${r.stepsDone}/${r.stepsTotal}`, r.createdAt.toISOString(), duration(r)]),
      )}\n`,
    );
  } finally {
    await client.close();
  }
}

export async function runRun(id: string, opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const client = await connectRuns(resolveSettings(globals));
  try {
    const run = requireRun(await client.get(id), id);
    if (opts.json) return printJson({ run });
    printRun(run);
  } finally {
    await client.close();
  }
}
