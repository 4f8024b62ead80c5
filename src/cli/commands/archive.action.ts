import { localGuard } from "../../access/index.js";
import type { ApiServices, RestoreHistoryInput } from "../../api/index.js";
import type { HistoryArchiveDay, RestoredHistory } from "../../storage/index.js";
import { printJson, table } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { ArchiveOptions, ArchiveRestoreOptions } from "./archive.js";

/** Dates as the API's JSON gives them (ISO strings), in and out of process alike. */
type Wire<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/** `tributary archive list`. */
export async function runArchiveList(opts: GlobalOptions & ArchiveOptions): Promise<void> {
  const settings = resolveSettings(opts);
  const url = await serverFor(settings);
  const days = url ? await daysViaServer(url) : (await inProcess(settings, (api) => api.history.days(localGuard()))).map(wireDay);
  if (opts.json) {
    printJson({ ok: true, days });
    return;
  }
  if (days.length === 0) {
    process.stdout.write(
      "no history is archived (reconcilers archive runs past TRIBUTARY_HISTORY_RETENTION or an asset's retention.history)\n",
    );
    return;
  }
  process.stdout.write(
    `${table(
      ["day (UTC)", "archives", "runs", "events", "rows", "logs", "size", "archived", "restored"],
      days.map((d) => [
        d.day,
        String(d.archives),
        String(d.runs),
        String(d.events),
        String(d.rows),
        String(d.logs),
        size(d.sizeBytes),
        d.lastArchivedAt?.slice(0, 16).replace("T", " ") ?? "",
        d.restoredArchives > 0
          ? `${d.restoredArchives} on ${d.lastRestoredAt?.slice(0, 16).replace("T", " ") ?? ""}${d.heldUntil ? `, held until ${d.heldUntil.slice(0, 10)}` : ""}`
          : "",
      ]),
    )}\n`,
  );
}

/** `tributary archive restore <day>`. */
export async function runArchiveRestore(day: string, opts: GlobalOptions & ArchiveRestoreOptions): Promise<void> {
  const settings = resolveSettings(opts);
  const input: RestoreHistoryInput = { day, ...(opts.hold !== undefined ? { hold: opts.hold } : {}) };
  const url = await serverFor(settings);
  const restored = url
    ? await restoreViaServer(url, input)
    : wireRestored(await inProcess(settings, (api) => api.history.restore(input, localGuard())));
  if (opts.json) {
    printJson({ ok: true, ...restored });
    return;
  }
  const r = restored.rows;
  process.stdout.write(
    `restored ${restored.day} from ${restored.archives} archive(s): ${r.runs} run(s), ${r.steps} step(s), ${r.stepTries} tr(ies), ` +
      `${r.events} event(s), ${r.eventInputs} lineage row(s), ${r.checkResults} check result(s)\n` +
      `the day is held out of archival until ${restored.heldUntil.slice(0, 16).replace("T", " ")} UTC\n`,
  );
}

interface WireRestored {
  day: string;
  archives: number;
  rows: {
    runs: number;
    steps: number;
    stepDeps: number;
    stepTries: number;
    triggers: number;
    events: number;
    eventInputs: number;
    checkResults: number;
  };
  heldUntil: string;
}

async function inProcess<T>(settings: Settings, fn: (api: ApiServices) => Promise<T>): Promise<T> {
  // Loaded only without a server: the database would slow every command's start.
  const { openRuntime } = await import("../runtime.js");
  const runtime = await openRuntime(settings);
  try {
    return await fn(runtime.apiContext());
  } finally {
    await runtime.close();
  }
}

function wireDay(d: HistoryArchiveDay): Wire<HistoryArchiveDay> {
  return {
    ...d,
    lastArchivedAt: d.lastArchivedAt?.toISOString() ?? null,
    lastRestoredAt: d.lastRestoredAt?.toISOString() ?? null,
    heldUntil: d.heldUntil?.toISOString() ?? null,
  };
}

function wireRestored(r: RestoredHistory): WireRestored {
  const rows = r.rows;
  return {
    day: r.day,
    archives: r.archives,
    rows: {
      runs: rows.runs,
      steps: rows.steps,
      stepDeps: rows.step_deps,
      stepTries: rows.step_tries,
      triggers: rows.triggers,
      events: rows.events,
      eventInputs: rows.event_inputs,
      checkResults: rows.check_results,
    },
    heldUntil: r.heldUntil.toISOString(),
  };
}

async function daysViaServer(url: string): Promise<Wire<HistoryArchiveDay>[]> {
  const data = await graphql<{ historyArchives: Wire<HistoryArchiveDay>[] }>(
    url,
    `
      {
        historyArchives {
          day
          archives
          runs
          events
          rows
          logs
          sizeBytes
          lastArchivedAt
          restoredArchives
          lastRestoredAt
          heldUntil
        }
      }
    `,
  );
  return data.historyArchives;
}

async function restoreViaServer(url: string, input: RestoreHistoryInput): Promise<WireRestored> {
  const data = await graphql<{ restoreHistory: WireRestored }>(
    url,
    `
      mutation ($input: RestoreHistoryInput!) {
        restoreHistory(input: $input) {
          day
          archives
          heldUntil
          rows {
            runs
            steps
            stepDeps
            stepTries
            triggers
            events
            eventInputs
            checkResults
          }
        }
      }
    `,
    { input },
  );
  return data.restoreHistory;
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}
