import { InputError } from "../errors/index.js";
import type { TriggerDecision, TriggerRule, UpstreamCounts } from "../sdk/index.js";

/**
 * Evaluates a trigger rule with Apache Airflow 2.x semantics: those of
 * `airflow/ti_deps/deps/trigger_rule_dep.py` (`TriggerRuleDep`) as the
 * scheduler runs it, i.e. with `flag_upstream_failed=True`, which is where
 * `skipped` and `upstream_failed` are decided. Decisions are taken as early
 * as Airflow takes them: `one_success` runs on the first success, `one_failed`
 * on the first failure, `all_success` is `upstream_failed` on the first
 * failure, `none_skipped` is `skipped` on the first skip, and so on.
 *
 * `done` is success + failed + upstream_failed + skipped (Airflow's
 * `State.finished` also holds `removed`, see below).
 *
 * Removed upstreams are left out, as if the step did not have them: in
 * Airflow a task that left the DAG also leaves its downstream's
 * `upstream_task_ids`, so it is neither counted in `upstream` nor among the
 * relevant finished upstreams; and for mapped upstreams, whose removed
 * instances do stay counted, `_evaluate_direct_relatives` subtracts `removed`
 * from the failures it counts (`num_failures -= removed`). A step whose
 * upstreams were all removed has none left and runs.
 *
 * @example
 * evaluateTriggerRule("all_success", { total: 3, success: 2, failed: 0, upstreamFailed: 0, skipped: 0, removed: 0 }); // "wait"
 * evaluateTriggerRule("all_success", { total: 3, success: 1, failed: 1, upstreamFailed: 0, skipped: 0, removed: 0 }); // "upstream_failed"
 */
export function evaluateTriggerRule(rule: TriggerRule, counts: UpstreamCounts): TriggerDecision {
  checkCounts(counts);
  const upstream = counts.total - counts.removed;
  // `_get_dep_statuses`: a task without upstreams, or with `always`, passes at once.
  if (upstream === 0 || rule === "always") return "run";
  const { success, failed, upstreamFailed, skipped } = counts;
  const done = success + failed + upstreamFailed + skipped;
  const upstreamDone = done >= upstream;
  const anyFailed = failed + upstreamFailed > 0;

  switch (rule) {
    case "all_success":
      // Airflow: `upstream_failed or failed` → UPSTREAM_FAILED, else `skipped` →
      // SKIPPED (skips propagate down all_success chains), both before the
      // other upstreams are done; passes when `upstream - success == 0`.
      if (anyFailed) return "upstream_failed";
      if (skipped > 0) return "skipped";
      return success === upstream ? "run" : "wait";
    case "all_failed":
      // Airflow: `success or skipped` → SKIPPED; passes when every upstream is failed or upstream_failed.
      if (success + skipped > 0) return "skipped";
      return failed + upstreamFailed === upstream ? "run" : "wait";
    case "all_done":
      // Airflow: never changes the state; passes once `done >= upstream`.
      return upstreamDone ? "run" : "wait";
    case "all_skipped":
      // Airflow: `success or failed or upstream_failed` → SKIPPED; passes when `upstream - skipped == 0`.
      if (success + failed + upstreamFailed > 0) return "skipped";
      return skipped === upstream ? "run" : "wait";
    case "one_success":
      // Airflow: passes on the first success; once all are done without one,
      // SKIPPED when every upstream was skipped (`done == skipped`), else UPSTREAM_FAILED.
      if (success > 0) return "run";
      if (!upstreamDone) return "wait";
      return skipped === done ? "skipped" : "upstream_failed";
    case "one_failed":
      // Airflow: passes on the first failed or upstream_failed upstream;
      // SKIPPED once all are done without one.
      if (anyFailed) return "run";
      return upstreamDone ? "skipped" : "wait";
    case "one_done":
      // Airflow: passes on the first success or failure (`success + failed > 0`;
      // upstream_failed and skipped do not count); SKIPPED once all are done without one.
      if (success + failed > 0) return "run";
      return upstreamDone ? "skipped" : "wait";
    case "none_failed":
      // Airflow: `upstream_failed or failed` → UPSTREAM_FAILED at once; passes
      // when every upstream succeeded or was skipped (all skipped included).
      if (anyFailed) return "upstream_failed";
      return success + skipped === upstream ? "run" : "wait";
    case "none_failed_min_one_success":
      // Airflow: as none_failed, but SKIPPED when every upstream was skipped (`skipped == upstream`).
      if (anyFailed) return "upstream_failed";
      if (skipped === upstream) return "skipped";
      return success + skipped === upstream ? "run" : "wait";
    case "none_skipped":
      // Airflow: any `skipped` → SKIPPED at once; otherwise passes once all are
      // done, whether they succeeded or failed.
      if (skipped > 0) return "skipped";
      return upstreamDone ? "run" : "wait";
  }
}

/** Counts of upstream step states, for {@link evaluateTriggerRule}. */
export function countUpstreamStates(states: Iterable<string>): UpstreamCounts {
  let total = 0;
  let success = 0;
  let failed = 0;
  let upstreamFailed = 0;
  let skipped = 0;
  let removed = 0;
  for (const state of states) {
    total++;
    if (state === "success") success++;
    else if (state === "failed") failed++;
    else if (state === "upstream_failed") upstreamFailed++;
    else if (state === "skipped") skipped++;
    else if (state === "removed") removed++;
  }
  return { total, success, failed, upstreamFailed, skipped, removed };
}

function checkCounts(counts: UpstreamCounts): void {
  const fields = ["total", "success", "failed", "upstreamFailed", "skipped", "removed"] as const;
  for (const field of fields) {
    const value = counts[field];
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new InputError(`upstream counts: "${field}" must be a non-negative integer, got ${String(value)}`, {
        code: "TRIGGER_COUNTS_INVALID",
        location: { field },
      });
    }
  }
  const ended = counts.success + counts.failed + counts.upstreamFailed + counts.skipped + counts.removed;
  if (ended > counts.total) {
    throw new InputError(
      `upstream counts: ${ended} upstreams ended (success ${counts.success}, failed ${counts.failed}, upstream_failed ${counts.upstreamFailed}, ` +
        `skipped ${counts.skipped}, removed ${counts.removed}) but "total" is ${counts.total}`,
      { code: "TRIGGER_COUNTS_INVALID", location: { field: "total" } },
    );
  }
}
