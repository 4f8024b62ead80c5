import { cronInWords, type PartitionsSpec } from "../partitions/index.js";
import type { AutomationSpec } from "./automation.js";

/**
 * The condition as the SDK call that builds it: `allOf(onCron("0 1 * * *"), not(hasFailed()))`.
 * @example describeCondition(anyOf(onCron("0 1 * * *"), onMissing())) // 'anyOf(onCron("0 1 * * *"), onMissing())'
 */
export function describeCondition(spec: AutomationSpec): string {
  switch (spec.kind) {
    case "cron":
      return `onCron(${JSON.stringify(spec.cron)}${spec.timezone ? `, { timezone: ${JSON.stringify(spec.timezone)} }` : ""})`;
    case "cron_tick":
      return `cronTickPassed(${JSON.stringify(spec.cron)}${spec.timezone ? `, { timezone: ${JSON.stringify(spec.timezone)} }` : ""})`;
    case "eager":
      return "eager()";
    case "missing":
      return "onMissing()";
    case "and":
      return `allOf(${spec.operands.map(describeCondition).join(", ")})`;
    case "or":
      return `anyOf(${spec.operands.map(describeCondition).join(", ")})`;
    case "not":
      return `not(${describeCondition(spec.operand)})`;
    case "is_missing":
      return "isMissing()";
    case "in_progress":
      return "isInProgress()";
    case "failed":
      return "hasFailed()";
    case "upstream_updated":
      return "upstreamUpdated()";
    case "upstreams_ready":
      return "upstreamsReady()";
    case "in_latest_window":
      return spec.count === 1 ? "inLatestWindow()" : `inLatestWindow(${spec.count})`;
    case "code_version_changed":
      return "codeVersionChanged()";
  }
}

/** What a condition is read about: the asset's partitions and the assets it reads, to name them in the sentence. */
export interface ConditionSubject {
  /** The asset's partitions; null or left out: the asset is not partitioned. */
  readonly partitions?: PartitionsSpec | null;
  /** The keys of the assets it reads. */
  readonly upstreams?: readonly string[];
}

/**
 * The condition as a sentence saying what automation does with the asset: `materialise the latest daily partition
 * every day at 01:00 UTC once \`shop/raw_orders\` is there`. Each operand of an anyOf() is a sentence of its own.
 * @example
 * conditionInWords(allOf(onCron("0 1 * * *", { timezone: "UTC" }), upstreamsReady()), {
 *   partitions: daily({ start: "2025-01-01" }),
 *   upstreams: ["shop/raw_orders"],
 * }); // "materialise the latest daily partition every day at 01:00 UTC once `shop/raw_orders` is there"
 */
export function conditionInWords(spec: AutomationSpec, subject: ConditionSubject = {}): string {
  const words = new SubjectWords(subject);
  if (spec.kind === "or" && spec.operands.length > 1) {
    return spec.operands.map((operand, i) => `${i === 0 ? "" : "also "}${sentence(operand, words)}`).join("; ");
  }
  return sentence(spec, words);
}

/** How the sentence names the asset's partitions and its upstream assets. */
class SubjectWords {
  private readonly partitioned: boolean;
  private readonly cadence: string;
  private readonly upstreams: readonly string[];

  constructor(subject: ConditionSubject) {
    const p = subject.partitions ?? null;
    this.partitioned = p !== null;
    const time =
      p?.kind === "time" ? p : p?.kind === "multi" ? p.dimensions.find((d) => d.partitions.kind === "time")?.partitions : undefined;
    this.cadence = time?.kind === "time" && time.cadence !== "cron" ? `${time.cadence} ` : "";
    this.upstreams = subject.upstreams ?? [];
  }

  get hasUpstreams(): boolean {
    return this.upstreams.length > 0;
  }

  /** Any partition the rest of the sentence picks (`it`, unpartitioned). */
  get any(): string {
    return this.partitioned ? "a partition" : "it";
  }

  latest(count: number): string {
    if (!this.partitioned) return "it";
    return count === 1 ? `the latest ${this.cadence}partition` : `any of the latest ${count} ${this.cadence}partitions`;
  }

  /** `` `a` is there ``, `` `a` and `b` are there ``. */
  ready(): string {
    if (this.upstreams.length === 0) return "its upstream assets are there";
    return `${this.names("and")} ${this.upstreams.length === 1 ? "is" : "are"} there`;
  }

  updated(): string {
    if (this.upstreams.length === 0) return "an upstream asset changed since it last read it";
    return `${this.names("or")} changed since it last read ${this.upstreams.length === 1 ? "it" : "them"}`;
  }

  private names(conjunction: "and" | "or"): string {
    const quoted = this.upstreams.map((k) => `\`${k}\``);
    if (quoted.length > 4) return `its ${quoted.length} upstream assets`;
    return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(", ")} ${conjunction} ${quoted.at(-1)!}`;
  }
}

function sentence(spec: AutomationSpec, words: SubjectWords): string {
  switch (spec.kind) {
    case "cron":
      return `materialise ${words.latest(1)} ${cronInWords(spec.cron, spec.timezone)}${words.hasUpstreams ? ` once ${words.ready()}` : ""}`;
    case "eager":
      return words.hasUpstreams
        ? `materialise ${words.any} when ${words.updated()}, or when it is missing and ${words.ready()}; not while it is in progress`
        : `materialise ${words.any} when it is missing; not while it is in progress`;
    case "missing":
      return (
        `materialise ${words.any} when it is missing${words.hasUpstreams ? `, once ${words.ready()}` : ""}, ` +
        "unless it is in progress or its latest try failed"
      );
    case "and":
      return conjunction(spec.operands, words);
    default:
      return conjunction([spec], words);
  }
}

/** allOf(…) as one sentence: which partitions, on which schedule, when, once what is there, unless what. */
function conjunction(operands: readonly AutomationSpec[], words: SubjectWords): string {
  const flat = operands.flatMap(function flatten(o): AutomationSpec[] {
    return o.kind === "and" ? o.operands.flatMap(flatten) : [o];
  });
  let scope: string | undefined;
  let schedule: string | undefined;
  let ready = false;
  const events: AutomationSpec[] = [];
  const unless: AutomationSpec[] = [];
  for (const o of flat) {
    if ((o.kind === "cron" || o.kind === "cron_tick") && schedule === undefined) {
      schedule = cronInWords(o.cron, o.timezone);
      // onCron waits for the upstream partitions; cronTickPassed alone does not.
      if (o.kind === "cron") ready = true;
    } else if (o.kind === "in_latest_window" && scope === undefined) scope = words.latest(o.count);
    else if (o.kind === "upstreams_ready") ready = true;
    else if (o.kind === "not") unless.push(o.operand);
    else events.push(o);
  }
  // A cron tick requests the latest partition due at it.
  scope ??= schedule === undefined ? words.any : words.latest(1);
  const when = events.map((e) => clause(e, words, events.length > 1)).join(" and ");
  return (
    `materialise ${scope}` +
    (schedule === undefined ? "" : ` ${schedule}`) +
    (when === "" ? "" : ` when ${when}`) +
    (ready ? `${when === "" ? "" : ","} once ${words.ready()}` : "") +
    (unless.length === 0 ? "" : `, unless ${unless.map((u) => clause(u, words, unless.length > 1)).join(" or ")}`)
  );
}

/** When one operand holds for a partition, as a clause about it (`it is missing`); nested ones in parentheses. */
function clause(spec: AutomationSpec, words: SubjectWords, nested: boolean): string {
  const group = (parts: readonly AutomationSpec[], joiner: string) => {
    const text = parts.map((p) => clause(p, words, parts.length > 1)).join(joiner);
    return nested && parts.length > 1 ? `(${text})` : text;
  };
  switch (spec.kind) {
    case "is_missing":
      return "it is missing";
    case "in_progress":
      return "it is in progress";
    case "failed":
      return "its latest try failed";
    case "upstream_updated":
      return words.updated();
    case "upstreams_ready":
      return words.ready();
    case "code_version_changed":
      return "it was materialised with another code version";
    case "in_latest_window":
      return spec.count === 1 ? "it is the latest partition" : `it is among the latest ${spec.count} partitions`;
    case "cron":
    case "cron_tick":
      return `a cron tick passed (${cronInWords(spec.cron, spec.timezone)})`;
    case "eager":
      return "eager() would request it";
    case "missing":
      return "onMissing() would request it";
    case "and":
      return group(spec.operands, " and ");
    case "or":
      return group(spec.operands, " or ");
    case "not":
      return negated(spec.operand, words);
  }
}

function negated(spec: AutomationSpec, words: SubjectWords): string {
  switch (spec.kind) {
    case "is_missing":
      return "it exists";
    case "in_progress":
      return "it is not in progress";
    case "failed":
      return "its latest try did not fail";
    case "not":
      return clause(spec.operand, words, true);
    default:
      return `not (${clause(spec, words, false)})`;
  }
}
