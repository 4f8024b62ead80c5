import { useQuery } from "../api";
import { QueryView } from "../components/QueryStates";
import { StateBadge } from "../components/StateBadge";
import { formatAgo, formatCount, formatTime } from "../format";
import "./DefinitionErrors.css";

interface DefinitionFile {
  path: string;
  status: string | null;
  code: string | null;
  message: string | null;
  location: Record<string, unknown> | null;
  loadMs: number | null;
  loadedAt: string | null;
  warnings: string[] | null;
  problems: { assetKey: string | null; code: string | null; field: string | null; message: string | null }[] | null;
}

const DEFINITIONS_QUERY = `query Definitions {
  definitionsVersion { version loadedAt }
  definitionFiles { path status code message location loadMs loadedAt warnings problems { assetKey code field message } }
}`;

/**
 * "shop/orders.ts:12:5 (asset shop/orders, field deps.raw)" from an error's location; the line comes from the
 * location or else from the message, which the loader starts with "file:line:column:".
 */
export function describeLocation(location: Record<string, unknown> | null, fallbackFile: string, message: string | null): string {
  const file = typeof location?.file === "string" ? location.file : fallbackFile;
  const fromMessage = message?.startsWith(`${file}:`) ? /^:(\d+)(?::(\d+))?:/.exec(message.slice(file.length)) : null;
  const line =
    typeof location?.line === "number" && location.line > 0
      ? `:${location.line}${typeof location.column === "number" ? `:${location.column}` : ""}`
      : fromMessage
        ? `:${fromMessage[1]}${fromMessage[2] ? `:${fromMessage[2]}` : ""}`
        : "";
  const extra = [
    typeof location?.assetKey === "string" ? `asset ${location.assetKey}` : "",
    typeof location?.field === "string" ? `field ${location.field}` : "",
    typeof location?.partitionKey === "string" ? `partition ${location.partitionKey}` : "",
  ].filter(Boolean);
  return `${file}${line}${extra.length ? ` (${extra.join(", ")})` : ""}`;
}

const hasErrors = (f: DefinitionFile) => f.status !== "ok" || (f.problems?.length ?? 0) > 0;

export function DefinitionErrorsPage() {
  const state = useQuery<{
    definitionsVersion: { version: number | null; loadedAt: string | null } | null;
    definitionFiles: DefinitionFile[] | null;
  }>(DEFINITIONS_QUERY, {}, { pollMs: 5_000 });
  return (
    <div className="definitions">
      <h1>Definitions</h1>
      <QueryView state={state} what="definition files">
        {(data) => {
          const files = [...(data.definitionFiles ?? [])].sort(
            (a, b) => Number(hasErrors(b)) - Number(hasErrors(a)) || a.path.localeCompare(b.path),
          );
          const broken = files.filter(hasErrors);
          const warned = files.filter((f) => (f.warnings?.length ?? 0) > 0);
          return (
            <>
              <p className="muted">
                {data.definitionsVersion?.version != null
                  ? `Definitions version ${data.definitionsVersion.version}, loaded ${formatAgo(data.definitionsVersion.loadedAt)}. `
                  : "No definitions loaded yet. "}
                {formatCount(files.length)} file{files.length === 1 ? "" : "s"}.
              </p>
              {broken.length === 0 ? (
                <div className="card definitions-ok" data-testid="definitions-ok">
                  No definition errors: every file loaded{warned.length ? `, ${warned.length} with warnings` : ""}.
                </div>
              ) : (
                <div className="error" data-testid="definitions-summary">
                  {broken.length} file{broken.length === 1 ? " has" : "s have"} errors; {broken.length === 1 ? "its" : "their"} assets are
                  left out of the graph until fixed.
                </div>
              )}
              {files.map((f) => (
                <FileCard key={f.path} file={f} />
              ))}
            </>
          );
        }}
      </QueryView>
    </div>
  );
}

function FileCard({ file: f }: { file: DefinitionFile }) {
  const problems = f.problems ?? [];
  const warnings = f.warnings ?? [];
  const failed = f.status !== "ok";
  return (
    <div
      className={`card definitions-file${failed || problems.length ? " broken" : ""}`}
      data-testid="definition-file"
      data-path={f.path}
      data-status={f.status ?? ""}
    >
      <div className="definitions-head">
        <code className="definitions-path">{f.path}</code>
        <StateBadge state={failed ? "failed" : problems.length ? "upstream_failed" : "success"} />
        <span className="muted">{f.status}</span>
        <span className="muted definitions-meta" title={formatTime(f.loadedAt)}>
          {f.loadMs != null ? `${formatCount(f.loadMs)} ms, ` : ""}loaded {formatAgo(f.loadedAt)}
        </span>
      </div>
      {failed ? (
        <div className="definitions-error" data-testid="definition-error">
          <div>
            {f.code ? <code className="code">{f.code}</code> : null}{" "}
            <span className="mono" data-testid="definition-location">
              {describeLocation(f.location, f.path, f.message)}
            </span>
          </div>
          <pre>{f.message ?? "The file failed to load (no message)."}</pre>
        </div>
      ) : null}
      {problems.length ? (
        <table className="grid definitions-problems" data-testid="definition-problems">
          <thead>
            <tr>
              <th>Asset</th>
              <th>Code</th>
              <th>Field</th>
              <th>Problem</th>
            </tr>
          </thead>
          <tbody>
            {problems.map((p, i) => (
              // Problems have no id; the same asset can have several, so the position completes the key.
              <tr key={`${p.assetKey ?? ""}:${p.code ?? ""}:${i}`}>
                <td className="mono">{p.assetKey ?? "–"}</td>
                <td>
                  <code>{p.code}</code>
                </td>
                <td className="mono">{p.field ?? "–"}</td>
                <td>{p.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {warnings.length ? (
        <ul className="definitions-warnings" data-testid="definition-warnings">
          {warnings.map((w, i) => (
            <li key={`${i}:${w}`}>{w}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
