import path from "node:path";
import { Redis } from "ioredis";
import type { StepDispatch } from "../execution/index.js";

/**
 * What the BullMQ executor (in the reconciler) and `tributary worker` share:
 * queue names, the job payload, the cancel channel and Redis connections.
 * Redis only carries steps to workers: Postgres stays the source of truth, so
 * a step whose job is lost (Redis restarted empty) is handed out again by the
 * reconciler within seconds (BullmqExecutor.lostTries), as a new try.
 */

/**
 * Key prefix of every BullMQ key Tributary writes (TRIBUTARY_REDIS_PREFIX): deployments that share one Redis
 * need distinct prefixes, or their workers would take each other's steps.
 */
export const BULLMQ_PREFIX = "tributary";
/** The queue of steps whose asset names none. */
export const DEFAULT_QUEUE_NAME = "default";
/** Workers listen here for steps to abort (a canceled run, a timeout decided elsewhere). */
export const CANCEL_CHANNEL = "tributary:cancel";

/** The BullMQ queue of an asset's `queue` (letters, digits, `_`, `.`, `-`: BullMQ forbids `:` in names). */
export function bullQueueName(queue: string | null | undefined): string {
  const name = queue ?? DEFAULT_QUEUE_NAME;
  return `steps.${name.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
}

/**
 * A step try in Redis: what the worker runs, with the try's execution-API token when one was issued. Its
 * `file` and `logRef` are relative (to the definitions and logs directories): a worker resolves them against
 * its own, which need not be where the reconciler's are.
 */
export interface StepJob {
  readonly dispatch: StepDispatch;
}

/** The dispatch as it travels: paths relative to the sender's directories. */
export function portableDispatch(d: StepDispatch, dirs: { definitionsDir: string; logsDir: string }): StepDispatch {
  return { ...d, file: toPortable(path.relative(dirs.definitionsDir, d.file)), logRef: toPortable(path.relative(dirs.logsDir, d.logRef)) };
}

/** The dispatch on a worker: paths resolved against its directories (refusing any that leave them). */
export function localDispatch(d: StepDispatch, dirs: { definitionsDir: string; logsDir: string }): StepDispatch {
  return { ...d, file: inside(dirs.definitionsDir, d.file, "definitions file"), logRef: inside(dirs.logsDir, d.logRef, "log file") };
}

function toPortable(relative: string): string {
  return relative.split(path.sep).join("/");
}

function inside(dir: string, relative: string, what: string): string {
  const resolved = path.resolve(dir, relative);
  const root = path.resolve(dir);
  if (resolved !== root && !resolved.startsWith(root + path.sep)) {
    throw new Error(`a job's ${what} "${relative}" is outside ${root}: the reconciler and this worker disagree on the directory layout`);
  }
  return resolved;
}

/**
 * Job ids are per try, so enqueuing the same try twice (a retried enqueue) adds one job; the run id keeps them
 * unique across databases (step ids are not), since BullMQ ignores a job whose id it still holds.
 */
export function stepJobId(dispatch: Pick<StepDispatch, "runId" | "stepId" | "tryNumber">): string {
  return `${dispatch.runId}.${dispatch.stepId}.${dispatch.tryNumber}`;
}

/** A message on CANCEL_CHANNEL. */
export interface CancelMessage {
  readonly stepIds: readonly number[];
  readonly reason: string;
}

/**
 * A Redis connection for BullMQ. Workers block on Redis (`maxRetriesPerRequest: null`, as BullMQ requires);
 * the producer fails fast while Redis is down (`enableOfflineQueue: false`), so a failed enqueue leaves the
 * steps queued in Postgres, to be handed out again, instead of hanging the reconciler.
 */
export function redisConnection(url: string, role: "producer" | "worker" | "subscriber"): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: role === "producer" ? 1 : null,
    enableOfflineQueue: role !== "producer",
    // Reconnect forever, backing off to 2 s: Redis restarting must not end a worker or a reconciler.
    retryStrategy: (times: number) => Math.min(times * 100, 2_000),
  });
}
