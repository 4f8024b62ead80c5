import { createHash } from "node:crypto";

/** One upstream partition a materialisation read, as far as its data version is concerned. */
export interface VersionedInput {
  readonly assetKey: string;
  readonly partitionKey: string;
  /** The upstream partition's data version when it was read; null when it has none (e.g. an external event reported without one). */
  readonly dataVersion: string | null;
  /** The upstream event that was read: stands in for a missing data version. */
  readonly eventId: number | null;
}

/**
 * The data version of a materialisation (see docs/glossary.md, "data version"):
 * a function of what went in rather than of the bytes that came out, so that
 * re-running unchanged code on unchanged inputs keeps the version, and a new
 * upstream version or a new code version changes it.
 *
 * - With inputs: the code version and the data versions of the inputs read,
 *   in (asset key, partition key) order; an input without a data version
 *   counts by the id of the event that was read.
 * - Without inputs (a root asset, or nothing was read): the code version and
 *   a hash of the output.
 * - Without a code version the code that ran is unknown, so the output hash
 *   takes its place: the same inputs then give the same version only when
 *   they gave the same output.
 *
 * @example
 * dataVersionOf("v1", [{ assetKey: "a", partitionKey: "", dataVersion: "x", eventId: 3 }], "{}"); // 16 hex digits
 */
export function dataVersionOf(codeVersion: string | null, inputs: readonly VersionedInput[], outputJson: string): string {
  const code = codeVersion ?? `output:${sha256(outputJson)}`;
  const parts =
    inputs.length === 0
      ? ["tributary.data-version.1", code, `output:${sha256(outputJson)}`]
      : [
          "tributary.data-version.1",
          code,
          ...[...inputs]
            .sort((a, b) => compare(a.assetKey, b.assetKey) || compare(a.partitionKey, b.partitionKey))
            .map((i) => [i.assetKey, i.partitionKey, i.dataVersion ?? `event:${i.eventId ?? "none"}`]),
        ];
  return sha256(JSON.stringify(parts)).slice(0, 16);
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Code-unit order: the same on every machine and locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
