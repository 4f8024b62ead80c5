import { distance } from "fastest-levenshtein";

/**
 * The existing key a mistyped one most likely meant: an exact match of the
 * last segment first (`orders` → `sales/orders`), else the nearest by edit
 * distance when it is near enough to be a typo rather than a guess.
 */
export function suggestKey(wanted: string, keys: Iterable<string>): string | undefined {
  const lastSegment = wanted.slice(wanted.lastIndexOf("/") + 1).toLowerCase();
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const key of keys) {
    const keyLast = key.slice(key.lastIndexOf("/") + 1).toLowerCase();
    // Same last segment: treat as a near miss of the prefix only.
    const score = keyLast === lastSegment ? 0.5 : distance(wanted.toLowerCase(), key.toLowerCase());
    if (score < bestScore || (score === bestScore && best !== undefined && key < best)) {
      best = key;
      bestScore = score;
    }
  }
  if (best === undefined) return undefined;
  const limit = Math.max(2, Math.floor(Math.max(wanted.length, best.length) / 3));
  return bestScore <= limit ? best : undefined;
}

/** `; did you mean "x"?` to append to a message, or the empty string. */
export function didYouMean(wanted: string, keys: Iterable<string>): string {
  const s = suggestKey(wanted, keys);
  return s === undefined ? "" : `; did you mean "${s}"?`;
}
