import { useState } from "react";
import { useMutation, useQuery } from "../api";
import { ErrorView, QueryView } from "../components/QueryStates";
import { formatAgo, formatCount, formatTime } from "../format";
import "./Pools.css";

interface Pool {
  name: string;
  description: string | null;
  slots: number | null;
  occupied: number | null;
  queued: number | null;
  includeDeferred: boolean | null;
  updatedAt: string | null;
}

const POOLS_QUERY = `query Pools { pools { name description slots occupied queued includeDeferred updatedAt } me { admin } }`;
const SET_SLOTS = `mutation SetPoolSlots($name: String!, $slots: Int!) { setPoolSlots(name: $name, slots: $slots) { name slots occupied queued includeDeferred updatedAt } }`;

export function PoolsPage() {
  const state = useQuery<{ pools: Pool[] | null; me: { admin: boolean } | null }>(POOLS_QUERY, {}, { pollMs: 5_000 });
  return (
    <div className="pools">
      <h1>Pools</h1>
      <p className="muted">
        Steps of the assets that use a pool compete for its slots; steps beyond them wait, queued. A pool that includes deferred steps keeps
        their slots while they wait on a trigger.
      </p>
      <QueryView state={state} what="pools">
        {(data) =>
          (data.pools ?? []).length === 0 ? (
            <p className="muted">No pools yet: a pool is created when a step first uses it, or by setting its slots.</p>
          ) : (
            <table className="grid pools-table" data-testid="pools-table">
              <thead>
                <tr>
                  <th>Pool</th>
                  <th>Occupancy</th>
                  <th>Occupied</th>
                  <th>Slots</th>
                  <th>Queued</th>
                  <th>Deferred steps</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {(data.pools ?? []).map((p) => (
                  <PoolRow key={p.name} pool={p} editable={data.me?.admin === true} onSaved={state.reload} />
                ))}
              </tbody>
            </table>
          )
        }
      </QueryView>
    </div>
  );
}

/** A pool's occupancy; its slots can be edited by an admin without a team (an instance-wide change). */
function PoolRow({ pool: p, editable, onSaved }: { pool: Pool; editable: boolean; onSaved: () => void }) {
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const save = useMutation<{ setPoolSlots: Pool | null }>(SET_SLOTS);
  const [invalid, setInvalid] = useState<string | undefined>(undefined);
  const slots = p.slots ?? 0;
  const occupied = p.occupied ?? 0;
  const share = slots > 0 ? Math.min(1, occupied / slots) : occupied > 0 ? 1 : 0;

  const submit = async () => {
    if (editing === undefined) return;
    const text = editing.trim();
    // Not a whole number cannot even be sent as an Int; any whole number goes to the API, which says what is wrong
    // with it (a negative count, too many).
    if (!/^-?\d+$/.test(text)) {
      save.reset();
      setInvalid(`Slots must be a whole number of 0 or more, got "${text}".`);
      return;
    }
    setInvalid(undefined);
    const result = await save.run({ name: p.name, slots: Number(text) });
    if (result?.setPoolSlots) {
      setEditing(undefined);
      onSaved();
    }
  };

  return (
    <>
      <tr data-testid="pool-row" data-pool={p.name}>
        <td>
          <strong className="mono">{p.name}</strong>
          {p.description ? <div className="muted pools-description">{p.description}</div> : null}
        </td>
        <td>
          <div className="progress pools-bar" title={`${formatCount(occupied)} of ${formatCount(slots)} slots occupied`}>
            <span style={{ width: `${share * 100}%`, background: share >= 1 ? "#dc2626" : share >= 0.8 ? "#ca8a04" : "#2563eb" }} />
          </div>
        </td>
        <td data-testid="pool-occupied">{formatCount(occupied)}</td>
        <td>
          {editing === undefined ? (
            <span className="pools-slots">
              <span data-testid="pool-slots">{formatCount(slots)}</span>{" "}
              {editable ? (
                <button
                  type="button"
                  onClick={() => {
                    save.reset();
                    setInvalid(undefined);
                    setEditing(String(slots));
                  }}
                  data-testid="pool-edit"
                >
                  Edit
                </button>
              ) : null}
            </span>
          ) : (
            <form
              className="pools-edit"
              onSubmit={(e) => {
                e.preventDefault();
                void submit();
              }}
            >
              <input
                aria-label={`Slots of ${p.name}`}
                value={editing}
                onChange={(e) => setEditing(e.target.value)}
                inputMode="numeric"
                size={6}
                autoFocus
                data-testid="pool-slots-input"
              />
              <button type="submit" className="primary" disabled={save.running} data-testid="pool-save">
                {save.running ? "Saving…" : "Save"}
              </button>
              <button
                type="button"
                onClick={() => {
                  save.reset();
                  setInvalid(undefined);
                  setEditing(undefined);
                }}
              >
                Cancel
              </button>
            </form>
          )}
        </td>
        <td data-testid="pool-queued">{formatCount(p.queued)}</td>
        <td>
          {p.includeDeferred ? (
            <span title="Deferred steps keep their slots while they wait">hold slots</span>
          ) : (
            <span className="muted">release slots</span>
          )}
        </td>
        <td title={formatTime(p.updatedAt)}>{formatAgo(p.updatedAt)}</td>
      </tr>
      {invalid ? (
        <tr>
          <td colSpan={7}>
            <div className="error" role="alert" data-testid="pool-invalid">
              {invalid}
            </div>
          </td>
        </tr>
      ) : null}
      {save.error ? (
        <tr>
          <td colSpan={7}>
            <ErrorView error={save.error} title={`Could not set the slots of ${p.name}`} />
          </td>
        </tr>
      ) : null}
    </>
  );
}
