// Source assets: the reconciler task that keeps observation triggers on due, unobserved partitions.
export { ObservationsTask } from "./observations-task.js";
export type { ObservationsTaskOptions } from "./observations-task.js";
export {
  observationTargets,
  observationWindow,
  DEFAULT_OBSERVE_POLL_MS,
  DEFAULT_OBSERVE_LOOKBACK,
  DEFAULT_MAX_OBSERVED_PARTITIONS,
} from "./observation-targets.js";
export type { ObservationWindow } from "./observation-targets.js";
