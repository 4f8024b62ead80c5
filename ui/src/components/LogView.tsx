// One try's log from GET /runs/:run/steps/:step/logs?try=N: Server-Sent Events, a `log` event per line, followed
// while the try runs and then one `end` event with how it ended; a finished try's log arrives the same way, whole.
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import "./LogView.css";

interface TryEnd {
  tryNumber: number;
  state: string;
  endedAt: string | null;
}

type Status =
  { kind: "connecting" } | { kind: "following" } | { kind: "ended"; end: TryEnd | undefined } | { kind: "error"; message: string };

/** Lines shown at most: a huge log keeps its newest lines (the whole log stays downloadable). */
const MAX_LINES = 20_000;

export function LogView({ runId, stepId, tryNumber }: { runId: string; stepId: string; tryNumber: number }) {
  const url = `/runs/${encodeURIComponent(runId)}/steps/${encodeURIComponent(stepId)}/logs?try=${tryNumber}`;
  const [lines, setLines] = useState<string[]>([]);
  const [dropped, setDropped] = useState(0);
  const [status, setStatus] = useState<Status>({ kind: "connecting" });
  const box = useRef<HTMLPreElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    setLines([]);
    setDropped(0);
    setStatus({ kind: "connecting" });
    const source = new EventSource(url);
    // Lines arrive one event each: gather them and render at most every 100 ms.
    let pending: string[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      timer = undefined;
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      setLines((prev) => {
        const next = prev.concat(batch);
        if (next.length <= MAX_LINES) return next;
        setDropped((d) => d + next.length - MAX_LINES);
        return next.slice(next.length - MAX_LINES);
      });
    };
    let closed = false;
    source.addEventListener("open", () => setStatus((s) => (s.kind === "connecting" ? { kind: "following" } : s)));
    source.addEventListener("log", (e) => {
      pending.push((e as MessageEvent<string>).data);
      timer ??= setTimeout(flush, 100);
    });
    source.addEventListener("end", (e) => {
      closed = true;
      source.close();
      if (timer !== undefined) clearTimeout(timer);
      flush();
      let end: TryEnd | undefined;
      try {
        end = JSON.parse((e as MessageEvent<string>).data) as TryEnd;
      } catch {
        end = undefined;
      }
      setStatus({ kind: "ended", end });
    });
    source.addEventListener("error", () => {
      if (closed) return;
      if (source.readyState !== EventSource.CLOSED) return; // reconnecting by itself, from the last line it saw
      closed = true;
      // The stream was refused (404, 403…): ask again as text to read the API's error message.
      void fetch(`${url}&format=text`).then(
        async (res) => {
          const body = await res.text();
          let message = `the log could not be read (HTTP ${res.status})`;
          try {
            const parsed = JSON.parse(body) as { error?: { code?: string; message?: string } };
            if (parsed.error?.message) message = `${parsed.error.code ? `${parsed.error.code}: ` : ""}${parsed.error.message}`;
          } catch {
            // not JSON: keep the status line
          }
          setStatus({ kind: "error", message });
        },
        (err: Error) => setStatus({ kind: "error", message: `the log could not be read: ${err.message}` }),
      );
    });
    return () => {
      closed = true;
      source.close();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [url]);

  // Keeps following the bottom unless the reader scrolled up.
  useLayoutEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  return (
    <div className="log-view" data-testid="log-view" data-status={status.kind}>
      <div className="log-status">
        {status.kind === "connecting" ? <span className="muted">Connecting…</span> : null}
        {status.kind === "following" ? (
          <span className="log-live" data-testid="log-live">
            ● following try {tryNumber}
          </span>
        ) : null}
        {status.kind === "ended" ? (
          <span className="muted" data-testid="log-ended">
            try {tryNumber} {status.end ? `ended: ${status.end.state.replace(/_/g, " ")}` : "ended"} · {lines.length} lines
          </span>
        ) : null}
        {status.kind === "error" ? (
          <span className="error-inline" role="alert" data-testid="log-error">
            {status.message}
          </span>
        ) : null}
        <a href={`${url}&format=text`} target="_blank" rel="noreferrer">
          raw
        </a>
      </div>
      <pre
        className="log-lines"
        ref={box}
        data-testid="log-lines"
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {dropped > 0 ? (
          <span className="muted">
            … {dropped} earlier lines not shown (open the raw log){"\n"}
          </span>
        ) : null}
        {lines.length === 0 && status.kind === "ended" ? <span className="muted">(this try logged nothing)</span> : lines.join("\n")}
      </pre>
    </div>
  );
}
