import { useCallback, useMemo } from "react";
import { useLocation, useSearch } from "wouter";

/**
 * The page's query string as a record, and a setter that merges changes into it (undefined or "" removes a key);
 * `replace` keeps the back button for real navigation rather than every keystroke of a filter.
 */
export function useUrlParams(): [
  Readonly<Record<string, string>>,
  (changes: Record<string, string | undefined>, options?: { replace?: boolean }) => void,
] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = useMemo(() => Object.fromEntries(new URLSearchParams(search)), [search]);
  const set = useCallback(
    (changes: Record<string, string | undefined>, options: { replace?: boolean } = {}) => {
      const next = new URLSearchParams(search);
      for (const [k, v] of Object.entries(changes)) {
        if (v === undefined || v === "") next.delete(k);
        else next.set(k, v);
      }
      const qs = next.toString();
      navigate(qs ? `${location}?${qs}` : location, { replace: options.replace ?? false });
    },
    [search, location, navigate],
  );
  return [params, set];
}
