import type { TriggerPartition } from "./trigger-check.js";
import { TriggerError } from "./trigger-error.js";

/** The fields a template may name; the SDK promises exactly these (sdk/triggers.ts). */
export const TEMPLATE_FIELDS = ["partition", "start", "end"] as const;
type TemplateField = (typeof TEMPLATE_FIELDS)[number];

/**
 * Fills `{partition}` (the partition key), `{start}` and `{end}` (the
 * partition window's bounds as ISO instants) in a path, key or URL template.
 * `{{` and `}}` stand for literal braces. Values are inserted as they are (no
 * URL or shell escaping): keys are validated by their partitions definition.
 *
 * Throws a TriggerError when the template names a field the partition does
 * not have (`{start}` on a static partition, `{partition}` on an unpartitioned
 * asset: TRIGGER_TEMPLATE_FIELD_MISSING), an unknown field
 * (TRIGGER_TEMPLATE_FIELD_UNKNOWN), or has an unmatched brace
 * (TRIGGER_TEMPLATE_INVALID).
 *
 * @param field where the template sits (e.g. "args.path"), for the error location
 * @param subject what the template belongs to (e.g. "trigger fileExists"), for the error message
 * @example
 * renderTemplate("/in/{partition}.csv", { key: "2025-03-15" }) // "/in/2025-03-15.csv"
 */
export function renderTemplate(template: string, partition: TriggerPartition | undefined, field = "template", subject?: string): string {
  // `field` goes into the error location (e.g. "args.path"); `subject` only prefixes the message.
  const where = subject ? `${subject} ${field}` : field;
  let out = "";
  let i = 0;
  while (i < template.length) {
    const c = template[i]!;
    if ((c === "{" || c === "}") && template[i + 1] === c) {
      out += c;
      i += 2;
      continue;
    }
    if (c === "}") throw invalid(template, where, field, `unmatched "}" at position ${i}; write "}}" for a literal brace`);
    if (c !== "{") {
      out += c;
      i += 1;
      continue;
    }
    const close = template.indexOf("}", i + 1);
    const nextOpen = template.indexOf("{", i + 1);
    if (close < 0 || (nextOpen >= 0 && nextOpen < close)) {
      throw invalid(template, where, field, `unmatched "{" at position ${i}; write "{{" for a literal brace`);
    }
    out += fieldValue(template.slice(i + 1, close).trim(), template, partition, where, field);
    i = close + 1;
  }
  return out;
}

function fieldValue(name: string, template: string, partition: TriggerPartition | undefined, where: string, field: string): string {
  if (!(TEMPLATE_FIELDS as readonly string[]).includes(name)) {
    throw new TriggerError(
      "TRIGGER_TEMPLATE_FIELD_UNKNOWN",
      `${where} "${template}" names the field {${name}}, which is not a template field; use ${TEMPLATE_FIELDS.map((f) => `{${f}}`).join(", ")}`,
      { location: { field, ...(partition ? { partitionKey: partition.key } : {}) } },
    );
  }
  const value = valueOf(name as TemplateField, partition);
  if (value === undefined) {
    const has =
      partition === undefined ? "the asset is not partitioned" : partition.window ? "" : `partition "${partition.key}" has no time window`;
    throw new TriggerError(
      "TRIGGER_TEMPLATE_FIELD_MISSING",
      `${where} "${template}" uses {${name}}, but ${has}; remove {${name}} from the template or give the asset ${name === "partition" ? "partitions" : "time partitions"}`,
      { location: { field, ...(partition ? { partitionKey: partition.key } : {}) } },
    );
  }
  return value;
}

function valueOf(field: TemplateField, partition: TriggerPartition | undefined): string | undefined {
  if (partition === undefined) return undefined;
  if (field === "partition") return partition.key;
  const bound = partition.window?.[field];
  if (bound === undefined) return undefined;
  return bound instanceof Date ? bound.toISOString() : bound;
}

function invalid(template: string, where: string, field: string, what: string): TriggerError {
  return new TriggerError("TRIGGER_TEMPLATE_INVALID", `${where} "${template}": ${what}`, { location: { field } });
}
