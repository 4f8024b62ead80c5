// Backfills: the reconciler task that turns a backfill's chunks into paced runs.
export { BackfillTask } from "./backfill-task.js";
export type { BackfillTaskOptions } from "./backfill-task.js";
