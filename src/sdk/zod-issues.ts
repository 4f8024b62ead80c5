import type { z } from "zod";
import { DefinitionError } from "../errors/index.js";

type Issue = z.core.$ZodIssue;

/**
 * The most specific issue: inside a union, the branch that got furthest
 * (so `retries.backoff` is blamed rather than `retries`).
 */
function deepest(issue: Issue): { path: PropertyKey[]; issue: Issue } {
  if (issue.code === "invalid_union" && issue.errors.length > 0) {
    let best: { path: PropertyKey[]; issue: Issue } | undefined;
    for (const branch of issue.errors) {
      const first = branch[0];
      if (!first) continue;
      const inner = deepest(first);
      if (!best || inner.path.length > best.path.length) best = inner;
    }
    if (best && best.path.length > 0) return { path: [...issue.path, ...best.path], issue: best.issue };
  }
  return { path: issue.path, issue };
}

/** Turns the first zod issue into a DefinitionError naming the field path. */
export function definitionErrorFromZod(
  what: string,
  error: z.ZodError,
  location: { assetKey?: string; fieldPrefix?: string } = {},
): DefinitionError {
  const first = error.issues[0];
  const { path: rawPath, issue } = first ? deepest(first) : { path: [], issue: undefined };
  const path = [location.fieldPrefix, ...rawPath.map(String)].filter(Boolean);
  let detail = issue ? issue.message : error.message;
  if (issue?.code === "unrecognized_keys") {
    path.push(String(issue.keys[0]));
    detail = "unknown field (check its spelling against the documented config fields)";
  }
  const field = path.join(".") || "(config)";
  const where = location.assetKey ? `asset "${location.assetKey}": ` : "";
  return new DefinitionError(`${where}${what}: field "${field}": ${detail}`, {
    location: { ...(location.assetKey ? { assetKey: location.assetKey } : {}), field },
  });
}
