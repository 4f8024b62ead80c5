// Progress bars of runs and backfills: segments for ended well, failed and active, with their counts.
import { formatCount } from "../format";
import { stateColor } from "../status";

/** Segments of a progress bar: each a count, a colour and a name (for the tooltip); the rest of `total` stays grey. */
export function ProgressBar({
  total,
  parts,
  testId,
}: {
  total: number;
  parts: readonly { count: number; color: string; label: string }[];
  testId?: string;
}) {
  const title = parts.map((p) => `${formatCount(p.count)} ${p.label}`).join(", ") + ` of ${formatCount(total)}`;
  return (
    <div className="progress" title={title} data-testid={testId}>
      {parts.map((p) =>
        p.count > 0 && total > 0 ? <span key={p.label} style={{ width: `${(100 * p.count) / total}%`, background: p.color }} /> : null,
      )}
    </div>
  );
}

/** A run's steps: ended well / failed / active of the total (stepsDone counts every ended step, failed ones too). */
export function StepsProgress({ run }: { run: { stepsTotal: number; stepsDone: number; stepsFailed: number; stepsActive: number } }) {
  return (
    <div className="steps-progress">
      <ProgressBar
        total={run.stepsTotal}
        parts={[
          { count: Math.max(run.stepsDone - run.stepsFailed, 0), color: stateColor("success"), label: "ended well" },
          { count: run.stepsFailed, color: stateColor("failed"), label: "failed" },
          { count: run.stepsActive, color: stateColor("running"), label: "active" },
        ]}
      />
      <span className="muted">
        {formatCount(run.stepsDone)}/{formatCount(run.stepsTotal)} ended
        {run.stepsFailed > 0 ? <span className="failed-count"> · {formatCount(run.stepsFailed)} failed</span> : null}
      </span>
    </div>
  );
}

/** A backfill's partitions: done / failed / in progress of those requested. */
export function BackfillProgress({
  backfill,
  testId,
}: {
  backfill: { requested: number; done: number; failed: number; inProgress: number };
  testId?: string;
}) {
  return (
    <div className="steps-progress">
      <ProgressBar
        total={backfill.requested}
        {...(testId ? { testId } : {})}
        parts={[
          { count: backfill.done, color: stateColor("success"), label: "done" },
          { count: backfill.failed, color: stateColor("failed"), label: "failed" },
          { count: backfill.inProgress, color: stateColor("running"), label: "in progress" },
        ]}
      />
      <span className="muted">
        {formatCount(backfill.done)}/{formatCount(backfill.requested)}
        {backfill.failed > 0 ? <span className="failed-count"> · {formatCount(backfill.failed)} failed</span> : null}
        {backfill.inProgress > 0 ? <span> · {formatCount(backfill.inProgress)} running</span> : null}
      </span>
    </div>
  );
}
