/**
 * Back / page n / next under a cursor-paged table: the pages walked so far are a stack of cursors (`depth` of
 * them); `next` is the cursor of the following page, undefined on the last one.
 */
export function StackPager<C>({
  depth,
  onBack,
  next,
  onNext,
  labels = ["← newer", "older →"],
  nextTestId,
}: {
  depth: number;
  onBack: () => void;
  next: C | undefined;
  onNext: (cursor: C) => void;
  labels?: readonly [string, string];
  nextTestId?: string;
}) {
  return (
    <div className="toolbar pager">
      <button type="button" disabled={depth === 1} onClick={onBack}>
        {labels[0]}
      </button>
      <span className="muted">page {depth}</span>
      <button type="button" disabled={next === undefined} onClick={() => next !== undefined && onNext(next)} data-testid={nextTestId}>
        {labels[1]}
      </button>
    </div>
  );
}
