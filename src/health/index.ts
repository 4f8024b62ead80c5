export { backoffDelayMs, RECONNECT_BACKOFF, type BackoffPolicy } from "./backoff.js";
export { isConnectionError, isConnectionErrorText } from "./connection-errors.js";
export {
  DependencyHealth,
  logOutagesOnce,
  reportOutages,
  type DependencyHealthOptions,
  type DependencyName,
  type DependencyState,
} from "./dependency-health.js";
export { untilStopSignal } from "./until-stop-signal.js";
