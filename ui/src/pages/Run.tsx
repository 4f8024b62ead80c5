import { useCallback, useEffect, useRef, type ReactNode } from "react";
import { Link } from "wouter";
import { useEventSource, useMutation, useQuery } from "../api";
import { Gantt, type GanttSort, type GanttStep } from "../components/Gantt";
import { LogView } from "../components/LogView";
import { StepsProgress } from "../components/ProgressBars";
import { ErrorView, Loading, NotFound } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { CheckTag, MapTag } from "../components/StepTags";
import { elapsedMs, useNow } from "../components/use-now";
import { useUrlParams } from "../components/use-url-params";
import { assetPath, formatDuration, formatTime } from "../format";
import { ACTIVE_RUN_STATUSES } from "../status";
import "./Run.css";

interface StepTry {
  tryNumber: number;
  state: string;
  workerId: string | null;
  hostname: string | null;
  pid: number | null;
  queuedAt: string | null;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  error: unknown;
  /** Whose fault the try's failure was; null when it did not fail. */
  failureClass: FailureClass | null;
}

type FailureClass = "USER" | "INFRASTRUCTURE";

interface Step extends GanttStep {
  checkName: string | null;
  mapLabel: string | null;
  /** Set on a step that fanned out: how many mapped steps it expanded into. */
  mapCount: number | null;
  tryNumber: number;
  maxTries: number;
  pool: string;
  priority: number;
  nextRetryAt: string | null;
  workerId: string | null;
  skipReason: string | null;
  error: unknown;
  tries: StepTry[];
  waitingFor: {
    id: string;
    kind: string;
    status: string;
    args: unknown;
    timeoutAt: string | null;
    nextCheckAt: string | null;
    lastResult: unknown;
  } | null;
}

interface RunDetail {
  id: string;
  status: string;
  origin: string;
  jobName: string | null;
  priority: number;
  tags: Record<string, unknown>;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  cancelRequestedAt: string | null;
  stepsTotal: number;
  stepsDone: number;
  stepsFailed: number;
  stepsActive: number;
  backfillId: string | null;
  planVersion: number;
  /** Cancelling needs the operator role on every asset of the run. */
  viewerCan: { operate: boolean } | null;
  steps: Step[];
}

const RUN_QUERY = `query Run($id: String!) {
  run(id: $id) {
    id status origin jobName priority tags createdAt startedAt endedAt cancelRequestedAt
    stepsTotal stepsDone stepsFailed stepsActive backfillId planVersion
    viewerCan { operate }
    steps {
      id assetKey partitionKey mapIndex mapLabel mapCount checkName state tryNumber maxTries pool priority scheduledAt queuedAt startedAt endedAt nextRetryAt
      workerId skipReason error
      tries { tryNumber state workerId hostname pid queuedAt startedAt endedAt durationMs error failureClass }
      waitingFor { id kind status args timeoutAt nextCheckAt lastResult }
    }
  }
}`;

const CANCEL = `mutation Cancel($id: String!) { cancelRun(id: $id) { id status cancelRequestedAt } }`;

/** /runs/:id — the run's header, its steps on a timeline, and the chosen step's details and logs (?step=&try=). */
export function RunPage({ runId }: { runId: string }) {
  const state = useQuery<{ run: RunDetail | null }>(RUN_QUERY, { id: runId });
  const run = state.data?.run;
  const live = run ? ACTIVE_RUN_STATUSES.has(run.status) : false;
  const { reload } = state;

  // Progress over SSE while the run is active: a change of its summary refetches the steps, at most once a second
  // (a big run's summary changes with every step), and always at the end.
  const lastSummary = useRef("");
  const lastReload = useRef(0);
  const trailing = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(trailing.current), []);
  const onEvent = useCallback(
    (event: string, data: unknown) => {
      const text = JSON.stringify(data);
      if (event !== "end" && text === lastSummary.current) return;
      lastSummary.current = text;
      clearTimeout(trailing.current);
      const wait = event === "end" ? 0 : lastReload.current + 1_000 - Date.now();
      const fire = () => {
        lastReload.current = Date.now();
        reload();
      };
      if (wait <= 0) fire();
      else trailing.current = setTimeout(fire, wait);
    },
    [reload],
  );
  useEventSource(live ? `/runs/${encodeURIComponent(runId)}/events` : undefined, onEvent, ["run", "end"]);

  if (state.error && !state.data) return <ErrorView error={state.error} />;
  if (!state.data) return <Loading what="the run" />;
  if (!run) return <NotFound what="Run" id={runId} />;
  return (
    <>
      {state.error ? <ErrorView error={state.error} /> : null}
      <RunView run={run} live={live} onChanged={reload} />
    </>
  );
}

function RunView({ run, live, onChanged }: { run: RunDetail; live: boolean; onChanged: () => void }) {
  const [params, setParams] = useUrlParams();
  const now = useNow(live);
  const cancel = useMutation<{ cancelRun: { id: string } }>(CANCEL);
  const sort: GanttSort = params.sort === "plan" ? "plan" : "start";
  const selected = run.steps.find((s) => s.id === params.step);
  const backfillId = run.backfillId;
  // useMutation's run never rejects (a failure shows in cancel.error), so the button starts this without awaiting it.
  const cancelRun = async () => {
    if (!window.confirm("Cancel this run? Its running steps are stopped.")) return;
    if (await cancel.run({ id: run.id })) onChanged();
  };

  return (
    <div className="run-page" data-testid="run-page" data-status={run.status}>
      <div className="run-head">
        <h1>
          Run <span className="mono">{run.id}</span> <StateBadge state={run.status} />
        </h1>
        {live && run.viewerCan?.operate ? (
          <button
            type="button"
            data-testid="cancel-run"
            disabled={cancel.running || run.cancelRequestedAt !== null}
            onClick={() => void cancelRun()}
          >
            {run.cancelRequestedAt ? "Cancel requested" : cancel.running ? "Canceling…" : "Cancel run"}
          </button>
        ) : null}
      </div>
      {cancel.error ? <ErrorView error={cancel.error} title="Could not cancel the run" /> : null}
      <div className="card run-facts">
        <Fact label="Origin">
          {run.origin}
          {backfillId ? (
            <>
              {" · "}
              <Link href={`/backfills/${backfillId}`} data-testid="run-backfill-link">
                backfill {backfillId.slice(0, 8)}
              </Link>
            </>
          ) : null}
        </Fact>
        {run.jobName ? <Fact label="Job">{run.jobName}</Fact> : null}
        <Fact label="Created">{formatTime(run.createdAt)}</Fact>
        <Fact label="Started">{formatTime(run.startedAt)}</Fact>
        <Fact label="Ended">{formatTime(run.endedAt)}</Fact>
        <Fact label="Duration">{formatDuration(elapsedMs(run.startedAt, run.endedAt, now))}</Fact>
        <Fact label="Steps">
          <StepsProgress run={run} />
        </Fact>
        {run.planVersion > 1 ? (
          <Fact label="Plan version">
            <span data-testid="plan-version" title="Steps joined the run (a fan-out) or were cleared inside it since it was planned">
              {run.planVersion}
            </span>
          </Fact>
        ) : null}
        {run.cancelRequestedAt ? <Fact label="Cancel requested">{formatTime(run.cancelRequestedAt)}</Fact> : null}
        {Object.keys(run.tags).length > 0 ? (
          <Fact label="Tags">
            {Object.entries(run.tags).map(([k, v]) => (
              <code key={k} className="tag">
                {k}={typeof v === "string" ? v : JSON.stringify(v)}
              </code>
            ))}
          </Fact>
        ) : null}
      </div>

      <div className="toolbar">
        <h2>Timeline</h2>
        <label>
          Order{" "}
          <select
            data-testid="gantt-sort"
            value={sort}
            onChange={(e) => setParams({ sort: e.target.value === "plan" ? "plan" : undefined }, { replace: true })}
          >
            <option value="start">by start</option>
            <option value="plan">as planned</option>
          </select>
        </label>
        <span className="muted">Click a step for its details and logs.</span>
      </div>
      <Gantt
        steps={run.steps}
        now={now}
        live={live}
        sort={sort}
        selectedId={selected?.id}
        onSelect={(id) => setParams({ step: id, try: undefined })}
      />

      {params.step && !selected ? <p className="error">This run has no step {params.step}.</p> : null}
      {selected ? (
        <StepDetails runId={run.id} step={selected} tryParam={params.try} onTry={(n) => setParams({ try: String(n) }, { replace: true })} />
      ) : null}
    </div>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="fact">
      <div className="fact-label">{label}</div>
      <div>{children}</div>
    </div>
  );
}

function StepDetails({
  runId,
  step,
  tryParam,
  onTry,
}: {
  runId: string;
  step: Step;
  tryParam: string | undefined;
  onTry: (n: number) => void;
}) {
  const tries = [...step.tries].sort((a, b) => a.tryNumber - b.tryNumber);
  const latest = tries.at(-1);
  const chosen = tries.find((t) => String(t.tryNumber) === tryParam) ?? latest;
  return (
    <div
      className="card step-details"
      data-testid="step-details"
      data-step-id={step.id}
      {...(step.checkName ? { "data-check": step.checkName } : {})}
    >
      <h2 data-testid="step-title">
        <Link href={assetPath(step.assetKey)}>{step.assetKey}</Link>
        {step.checkName ? (
          <>
            {" "}
            <Link
              href={`${assetPath(step.assetKey)}?tab=checks${step.partitionKey ? `&partition=${encodeURIComponent(step.partitionKey)}` : ""}`}
            >
              <CheckTag checkName={step.checkName} />
            </Link>
          </>
        ) : null}
        {step.partitionKey ? <span className="mono"> [{step.partitionKey}]</span> : null}
        <MapTag mapIndex={step.mapIndex} mapLabel={step.mapLabel} /> <StateBadge state={step.state} />
      </h2>
      <div className="run-facts">
        <Fact label="Try">
          {step.tryNumber} of {step.maxTries}
        </Fact>
        {step.mapCount !== null ? (
          <Fact label="Fan-out">
            <span data-testid="map-count">{step.mapCount}</span> mapped step{step.mapCount === 1 ? "" : "s"}
          </Fact>
        ) : null}
        <Fact label="Pool">{step.pool}</Fact>
        <Fact label="Priority">{step.priority}</Fact>
        <Fact label="Worker">
          {chosen?.workerId ?? step.workerId ?? "–"}
          {chosen?.hostname ? ` (${chosen.hostname}${chosen.pid ? `, pid ${chosen.pid}` : ""})` : ""}
        </Fact>
        <Fact label="Queued">{formatTime(step.queuedAt)}</Fact>
        <Fact label="Started">{formatTime(step.startedAt)}</Fact>
        <Fact label="Ended">{formatTime(step.endedAt)}</Fact>
        {step.nextRetryAt ? <Fact label="Next retry">{formatTime(step.nextRetryAt)}</Fact> : null}
      </div>
      {step.skipReason ? (
        <p data-testid="skip-reason">
          <strong>Skipped:</strong> {step.skipReason}
        </p>
      ) : null}
      {step.waitingFor ? (
        <div className="waiting-for" data-testid="waiting-for">
          <strong>{step.waitingFor.status === "waiting" ? "Waiting for" : "Waited for"}</strong> <code>{step.waitingFor.kind}</code>{" "}
          <StateBadge state={step.waitingFor.status} /> <code>{JSON.stringify(step.waitingFor.args)}</code>
          {step.waitingFor.timeoutAt ? <span className="muted"> · times out {formatTime(step.waitingFor.timeoutAt)}</span> : null}
          {step.waitingFor.nextCheckAt && step.waitingFor.status === "waiting" ? (
            <span className="muted"> · next check {formatTime(step.waitingFor.nextCheckAt)}</span>
          ) : null}{" "}
          <Link href={`/triggers?id=${step.waitingFor.id}`}>trigger</Link>
        </div>
      ) : null}
      {step.error ? <StepError error={step.error} failureClass={step.state === "failed" ? (latest?.failureClass ?? null) : null} /> : null}

      {tries.length === 0 ? (
        <p className="muted">It has not run yet, so it has no log.</p>
      ) : (
        <>
          <div className="toolbar tries" data-testid="tries">
            <strong>Tries</strong>
            {tries.map((t) => (
              <button
                key={t.tryNumber}
                type="button"
                className={t === chosen ? "primary" : ""}
                onClick={() => onTry(t.tryNumber)}
                data-testid={`try-${t.tryNumber}`}
                title={`${t.state}${t.failureClass ? ` (${FAILURE_CLASS_TEXT[t.failureClass].label})` : ""}, ${formatDuration(t.durationMs ?? undefined)}`}
                {...(t.failureClass ? { "data-failure-class": t.failureClass.toLowerCase() } : {})}
              >
                {t.tryNumber}: {t.state.replace(/_/g, " ")}
                {t.failureClass === "INFRASTRUCTURE" ? " (infrastructure)" : ""}
              </button>
            ))}
          </div>
          {chosen && chosen !== latest && chosen.error ? (
            <StepError error={chosen.error} title={`Try ${chosen.tryNumber} failed`} failureClass={chosen.failureClass} />
          ) : null}
          {chosen ? <LogView key={`${step.id}:${chosen.tryNumber}`} runId={runId} stepId={step.id} tryNumber={chosen.tryNumber} /> : null}
        </>
      )}
    </div>
  );
}

const FAILURE_CLASS_TEXT: Record<FailureClass, { label: string; explain: string }> = {
  USER: {
    label: "user failure",
    explain: "The asset's code failed (it threw, timed out or returned something bad): this counts against its retries",
  },
  INFRASTRUCTURE: {
    label: "infrastructure failure",
    explain:
      "The try ended for a reason outside the asset's code (a lost or stopped worker, an unreachable API, database or store): " +
      "it is re-run on the infrastructure retry budget and does not count against the asset's retries",
  },
};

/**
 * A serialized step error: its code and message, the stack folded away, the cause (if any) below; with the
 * failure's class, whose fault it was.
 */
function StepError({ error, title, failureClass }: { error: unknown; title?: string; failureClass?: FailureClass | null }) {
  const e = (typeof error === "object" && error !== null ? error : { message: String(error) }) as {
    name?: string;
    code?: string;
    message?: string;
    stack?: string;
    cause?: unknown;
  };
  return (
    <div className="error step-error" data-testid="step-error">
      <strong>{title ?? "Error"}</strong>
      {e.code ? <code className="code">{e.code}</code> : null}
      {failureClass ? (
        <span
          className={`failure-class failure-class-${failureClass.toLowerCase()}`}
          data-testid="failure-class"
          title={FAILURE_CLASS_TEXT[failureClass].explain}
        >
          {FAILURE_CLASS_TEXT[failureClass].label}
        </span>
      ) : null}
      <div>
        {e.name && e.name !== "Error" ? `${e.name}: ` : ""}
        {e.message ?? JSON.stringify(error)}
      </div>
      {e.stack ? (
        <details>
          <summary>Stack</summary>
          <pre>{e.stack}</pre>
        </details>
      ) : null}
      {e.cause ? <StepError error={e.cause} title="Caused by" /> : null}
    </div>
  );
}
