import { useCallback } from "react";
import { useSearchParams } from "wouter";

/** The page's URL query: read with get(), changed with set() (replacing the history entry, so Back leaves the page). */
export interface PageParams {
  get(name: string): string | undefined;
  set(changes: Record<string, string | undefined>): void;
}

export function usePageParams(): PageParams {
  const [params, setParams] = useSearchParams();
  const set = useCallback(
    (changes: Record<string, string | undefined>) =>
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          for (const [k, v] of Object.entries(changes)) {
            if (v === undefined || v === "") next.delete(k);
            else next.set(k, v);
          }
          return next;
        },
        { replace: true },
      ),
    [setParams],
  );
  return { get: (name) => params.get(name) ?? undefined, set };
}
