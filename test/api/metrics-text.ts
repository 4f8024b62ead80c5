// A strict reader of the Prometheus text exposition format (0.0.4) for the metrics tests:
// any line it does not understand fails the test, so malformed output cannot pass unnoticed.

export interface MetricFamily {
  readonly name: string;
  help: string;
  type: string;
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PrometheusText {
  readonly families: ReadonlyMap<string, MetricFamily>;
  readonly samples: readonly Sample[];
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const COMMENT = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`);
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: \\d+)?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);
const SUFFIXES: Readonly<Record<string, readonly string[]>> = { histogram: ["_bucket", "_sum", "_count"], summary: ["_sum", "_count"] };

/** Parses the text; throws naming the line on anything outside the format. */
export function parsePrometheusText(text: string): PrometheusText {
  const families = new Map<string, MetricFamily>();
  const samples: Sample[] = [];
  text.split("\n").forEach((line, index) => {
    const where = `line ${index + 1} "${line}"`;
    if (line === "") return;
    const comment = COMMENT.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment as unknown as [string, string, string, string];
      const family = families.get(name) ?? { name, help: "", type: "" };
      families.set(name, family);
      if (kind === "HELP") family.help = rest;
      else if (TYPES.has(rest)) family.type = rest;
      else throw new Error(`${where}: unknown metric type`);
      return;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`${where}: not a sample`);
    const [, name, labelText, valueText] = match as unknown as [string, string, string | undefined, string];
    const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText !== "NaN") throw new Error(`${where}: bad value`);
    if (!familyOf(families, name)) throw new Error(`${where}: sample without a # TYPE line for its family`);
    samples.push({ name, labels: parseLabels(labelText ?? "", where), value });
  });
  return { families, samples };
}

function parseLabels(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (!m) throw new Error(`${where}: bad labels at "${text.slice(start)}"`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
  }
  return labels;
}

function familyOf(families: ReadonlyMap<string, MetricFamily>, sampleName: string): MetricFamily | undefined {
  const exact = families.get(sampleName);
  if (exact?.type) return exact;
  for (const family of families.values()) {
    if ((SUFFIXES[family.type] ?? []).some((suffix) => sampleName === family.name + suffix)) return family;
  }
  return undefined;
}

/** The value of the one sample with this name and exactly these labels; throws when there is none. */
export function sample(text: PrometheusText, name: string, labels: Readonly<Record<string, string>>): number {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const found = text.samples.filter((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted);
  if (found.length !== 1) {
    const near = text.samples.filter((s) => s.name === name).map((s) => JSON.stringify(s.labels));
    throw new Error(`${found.length} samples ${name}${JSON.stringify(labels)}; with that name: ${near.join(" ") || "none"}`);
  }
  return found[0]!.value;
}
