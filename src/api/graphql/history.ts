// historyArchives and restoreHistory: the history the reconcilers archived past its retention, and bringing a day back.
import { z } from "zod";
import type { HistoryArchiveDay, HistoryTable, RestoredHistory } from "../../storage/index.js";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";

const restoreInput = z.strictObject({
  day: z.string().min(1, "name the day to restore (YYYY-MM-DD, UTC)"),
  hold: z.string().min(1).optional(),
});

const RestoreHistoryInput = builder.inputType("RestoreHistoryInput", {
  fields: (t) => ({
    day: t.string({ required: true, description: "The day (YYYY-MM-DD, UTC) whose archived history to bring back" }),
    hold: t.string({ description: "How long the day stays out of archival afterwards (1h to 3650d); default 7d" }),
  }),
});

const HistoryArchiveDayRef = builder.objectRef<HistoryArchiveDay>("HistoryArchiveDay").implement({
  description:
    "A day (UTC) of history archived to the output store: runs created that day with their steps, tries, waits, events, " +
    "lineage rows, check results and logs, and events of no run recorded that day",
  fields: (t) => ({
    day: t.exposeString("day"),
    archives: t.exposeInt("archives", { description: "Objects holding the day's archived history" }),
    runs: t.exposeInt("runs"),
    events: t.exposeInt("events"),
    rows: t.exposeInt("rows", { description: "Rows of every table in those objects" }),
    logs: t.exposeInt("logs", { description: "Try log files in those objects" }),
    sizeBytes: t.exposeFloat("sizeBytes", { description: "Compressed size of the objects (a Float: it outgrows a 32-bit Int)" }),
    lastArchivedAt: t.expose("lastArchivedAt", { type: "DateTime", nullable: true }),
    restoredArchives: t.exposeInt("restoredArchives", { description: "Archives of the day brought back (their rows are in the database)" }),
    lastRestoredAt: t.expose("lastRestoredAt", { type: "DateTime", nullable: true }),
    heldUntil: t.expose("heldUntil", {
      type: "DateTime",
      nullable: true,
      description: "A restore holds the day out of archival until then",
    }),
  }),
});

const RestoredRowsRef = builder.objectRef<Readonly<Record<HistoryTable, number>>>("RestoredHistoryRows").implement({
  description: "Rows put back, by table (rows already in the database are left as they are and not counted)",
  fields: (t) => ({
    runs: t.int({ resolve: (r) => r.runs }),
    steps: t.int({ resolve: (r) => r.steps }),
    stepDeps: t.int({ resolve: (r) => r.step_deps }),
    stepTries: t.int({ resolve: (r) => r.step_tries }),
    triggers: t.int({ resolve: (r) => r.triggers }),
    events: t.int({ resolve: (r) => r.events }),
    eventInputs: t.int({ resolve: (r) => r.event_inputs }),
    checkResults: t.int({ resolve: (r) => r.check_results }),
  }),
});

const RestoredHistoryRef = builder.objectRef<RestoredHistory>("RestoredHistory").implement({
  description: "What a restore brought back",
  fields: (t) => ({
    day: t.exposeString("day"),
    archives: t.exposeInt("archives"),
    rows: t.field({ type: RestoredRowsRef, resolve: (r) => r.rows }),
    heldUntil: t.expose("heldUntil", { type: "DateTime" }),
  }),
});

builder.queryFields((t) => ({
  historyArchives: t.field({
    type: [HistoryArchiveDayRef],
    description: "Days of history archived past their retention (TRIBUTARY_HISTORY_RETENTION, an asset's retention.history), newest first",
    resolve: (_root, _args, ctx) => ctx.history.days(ctx.guard),
  }),
}));

builder.mutationFields((t) => ({
  restoreHistory: t.field({
    type: RestoredHistoryRef,
    description:
      "Brings a day's archived history back into the database (runs, steps, tries, events, lineage, check results, logs) " +
      "and holds the day out of archival for a while; the archive objects are then deleted. Needs admin",
    args: { input: t.arg({ type: RestoreHistoryInput, required: true }) },
    // TributaryErrors reach the client with their code (see maskError in app.ts).
    resolve: (_root, args, ctx) => ctx.history.restore(parseInput(restoreInput, args.input, "restoreHistory"), ctx.guard),
  }),
}));
