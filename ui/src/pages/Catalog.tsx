import { useMemo } from "react";
import { Link, useSearchParams } from "wouter";
import { useQuery } from "../api";
import { DefinitionsGate } from "../components/DefinitionsGate";
import { HealthBar, type StatusCounts } from "../components/HealthBar";
import { QueryView } from "../components/QueryStates";
import { assetPath, formatAgo, formatCount, formatTime } from "../format";
import "./Catalog.css";

interface CatalogAsset {
  key: string;
  group: string | null;
  owner: string | null;
  kind: string | null;
  tags: Record<string, unknown> | null;
  partitionsDescription: string | null;
  paused: boolean | null;
  partitionStatus: { counts: StatusCounts | null } | null;
  latestMaterialization: { createdAt: string | null; runId: string | null; kind: string | null } | null;
}

// One request for the whole list: the API loads partition counts and latest materialisations of all assets in
// one batched query each, so filtering and paging happen here without asking again.
const CATALOG_QUERY = `query Catalog {
  assets {
    key group owner kind tags partitionsDescription paused
    partitionStatus { counts { total materialized stale failed materializing missing timedOut erased } }
    latestMaterialization { createdAt runId kind }
  }
}`;

export const STATUS_FILTERS: Record<string, { label: string; test: (c: StatusCounts) => boolean }> = {
  failed: { label: "has failed", test: (c) => (c.failed ?? 0) > 0 },
  stale: { label: "has stale", test: (c) => (c.stale ?? 0) > 0 },
  missing: { label: "has missing", test: (c) => (c.missing ?? 0) > 0 },
  erased: { label: "has erased", test: (c) => (c.erased ?? 0) > 0 },
  materializing: { label: "materializing", test: (c) => (c.materializing ?? 0) > 0 },
  materialized: { label: "all materialized", test: (c) => (c.total ?? 0) > 0 && c.materialized === c.total },
};

const PAGE_SIZE = 100;

/** Tags as "name=value" strings (a tag without a value is just its name). */
function tagStrings(tags: Record<string, unknown> | null): string[] {
  if (!tags) return [];
  return Object.entries(tags).map(([k, v]) =>
    v === "" || v === true || v == null ? k : `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`,
  );
}

const distinct = (values: readonly (string | null)[]): string[] => [...new Set(values.filter((v): v is string => !!v))].sort();

export function CatalogPage() {
  return (
    <div className="catalog">
      <h1>Assets</h1>
      <DefinitionsGate>
        <CatalogAssets />
      </DefinitionsGate>
    </div>
  );
}

function CatalogAssets() {
  const state = useQuery<{ assets: CatalogAsset[] | null }>(CATALOG_QUERY, {}, { pollMs: 15_000 });
  return (
    <QueryView state={state} what="assets">
      {(data) => <Catalog assets={data.assets ?? []} />}
    </QueryView>
  );
}

function Catalog({ assets }: { assets: readonly CatalogAsset[] }) {
  const [params, setParams] = useSearchParams();
  const q = params.get("q") ?? "";
  const group = params.get("group") ?? "";
  const owner = params.get("owner") ?? "";
  const tag = params.get("tag") ?? "";
  const status = params.get("status") ?? "";
  const page = Math.max(1, Number(params.get("page")) || 1);

  /** Sets (or, with "", removes) filters in the URL; a filter change goes back to the first page. */
  const update = (changes: Record<string, string>) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        for (const [k, v] of Object.entries(changes)) {
          if (v) next.set(k, v);
          else next.delete(k);
        }
        if (!("page" in changes)) next.delete("page");
        return next;
      },
      { replace: true },
    );

  const options = useMemo(
    () => ({
      groups: distinct(assets.map((a) => a.group)),
      owners: distinct(assets.map((a) => a.owner)),
      tags: distinct(assets.flatMap((a) => tagStrings(a.tags))),
    }),
    [assets],
  );
  const sorted = useMemo(() => [...assets].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)), [assets]);
  const filtered = useMemo(() => {
    const needle = q.trim().toLowerCase();
    const statusTest = STATUS_FILTERS[status]?.test;
    return sorted.filter(
      (a) =>
        (!needle || a.key.toLowerCase().includes(needle)) &&
        (!group || a.group === group) &&
        (!owner || a.owner === owner) &&
        (!tag || tagStrings(a.tags).includes(tag)) &&
        (!statusTest || (a.partitionStatus?.counts ? statusTest(a.partitionStatus.counts) : false)),
    );
  }, [sorted, q, group, owner, tag, status]);

  const pages = Math.max(1, Math.ceil(filtered.length / PAGE_SIZE));
  const current = Math.min(page, pages);
  const rows = filtered.slice((current - 1) * PAGE_SIZE, current * PAGE_SIZE);
  const now = Date.now();
  const filtering = !!(q || group || owner || tag || status);

  return (
    <>
      <div className="toolbar" data-testid="catalog-filters">
        <input
          type="search"
          placeholder="Search asset keys"
          aria-label="Search asset keys"
          value={q}
          onChange={(e) => update({ q: e.target.value })}
          data-testid="catalog-search"
          className="catalog-search"
        />
        <FilterSelect label="Group" value={group} values={options.groups} onChange={(v) => update({ group: v })} testId="filter-group" />
        <FilterSelect label="Owner" value={owner} values={options.owners} onChange={(v) => update({ owner: v })} testId="filter-owner" />
        <FilterSelect label="Tag" value={tag} values={options.tags} onChange={(v) => update({ tag: v })} testId="filter-tag" />
        <label>
          Status{" "}
          <select value={status} onChange={(e) => update({ status: e.target.value })} data-testid="filter-status">
            <option value="">all</option>
            {Object.entries(STATUS_FILTERS).map(([value, f]) => (
              <option key={value} value={value}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
        {filtering ? (
          <button type="button" onClick={() => update({ q: "", group: "", owner: "", tag: "", status: "" })}>
            Clear filters
          </button>
        ) : null}
        <span className="muted" data-testid="catalog-count" data-count={filtered.length}>
          {filtering ? `${formatCount(filtered.length)} of ${formatCount(assets.length)} assets` : `${formatCount(assets.length)} assets`}
        </span>
      </div>
      {rows.length === 0 ? (
        <p className="muted" data-testid="catalog-empty">
          {assets.length === 0 ? "No assets are defined yet: add a definitions file." : "No asset matches these filters."}
        </p>
      ) : (
        <table className="grid catalog-table" data-testid="catalog-table">
          <thead>
            <tr>
              <th>Asset</th>
              <th>Group</th>
              <th>Owner</th>
              <th>Partitions</th>
              <th>Latest materialisation</th>
              <th>Health</th>
              <th>Stale</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((a) => (
              <AssetRow key={a.key} asset={a} now={now} />
            ))}
          </tbody>
        </table>
      )}
      {pages > 1 ? (
        <div className="toolbar catalog-pager" data-testid="catalog-pager">
          <button type="button" disabled={current <= 1} onClick={() => update({ page: String(current - 1) })}>
            Previous
          </button>
          <span>
            Page {current} of {pages}
          </span>
          <button type="button" disabled={current >= pages} onClick={() => update({ page: String(current + 1) })}>
            Next
          </button>
        </div>
      ) : null}
    </>
  );
}

function FilterSelect({
  label,
  value,
  values,
  onChange,
  testId,
}: {
  label: string;
  value: string;
  values: readonly string[];
  onChange: (v: string) => void;
  testId: string;
}) {
  // A value from a shared link that no asset has any more stays selectable, so the page shows why nothing matches.
  const all = value && !values.includes(value) ? [value, ...values] : values;
  return (
    <label>
      {label}{" "}
      <select value={value} onChange={(e) => onChange(e.target.value)} data-testid={testId}>
        <option value="">all</option>
        {all.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    </label>
  );
}

function AssetRow({ asset: a, now }: { asset: CatalogAsset; now: number }) {
  const counts = a.partitionStatus?.counts ?? null;
  const latest = a.latestMaterialization;
  return (
    <tr data-testid="catalog-row" data-key={a.key}>
      <td>
        <Link href={assetPath(a.key)} className="mono">
          {a.key}
        </Link>
        {a.kind === "source" ? <span className="catalog-tag">source</span> : null}
        {a.paused ? (
          <span className="catalog-tag paused" title="Automation and schedules start no runs for it">
            paused
          </span>
        ) : null}
      </td>
      <td>{a.group ?? <span className="muted">–</span>}</td>
      <td>{a.owner ?? <span className="muted">–</span>}</td>
      <td className="catalog-partitions">{a.partitionsDescription ?? <span className="muted">unpartitioned</span>}</td>
      <td title={latest?.createdAt ? formatTime(latest.createdAt) : undefined}>
        {latest?.createdAt ? (
          latest.runId ? (
            <Link href={`/runs/${latest.runId}`}>{formatAgo(latest.createdAt, now)}</Link>
          ) : (
            <span>
              {formatAgo(latest.createdAt, now)} <span className="muted">({(latest.kind ?? "").toLowerCase()})</span>
            </span>
          )
        ) : (
          <span className="muted">never</span>
        )}
      </td>
      <td>
        <HealthBar counts={counts} />
      </td>
      <td data-testid="stale-count">
        {counts?.stale ? <span className="catalog-stale">{formatCount(counts.stale)}</span> : <span className="muted">0</span>}
      </td>
    </tr>
  );
}
