// The execution workloads every system in the benchmarks runs, with no-op steps:
//
// W1 chain: 2 000 independent 3-step chains (a → b → c): steps/s end to end, and the hand-off latency from an
//    upstream step's end to its downstream step's start (p50, p99).
// W2 fan-out/fan-in: 1 root, 500 children, 1 join: wall time.
// W3 burst: 5 000 ready steps at once: steps/s.
import { ascending, nearestRank, round1 } from "./_setup.js";

export const W1_CHAINS = 2_000;
export const W2_CHILDREN = 500;
export const W3_STEPS = 5_000;

export type Workload = "w1" | "w2" | "w3";
export const WORKLOADS: readonly Workload[] = ["w1", "w2", "w3"];

export interface Handoff {
  readonly p50: number;
  readonly p99: number;
  readonly samples: number;
}

export interface W1Result {
  readonly steps: number;
  readonly wallMs: number;
  readonly stepsPerSec: number;
  readonly handoffMs: Handoff;
}

export interface W2Result {
  readonly steps: number;
  readonly wallMs: number;
}

export interface W3Result {
  readonly steps: number;
  readonly wallMs: number;
  readonly stepsPerSec: number;
}

export interface WorkloadResults {
  w1?: W1Result;
  w2?: W2Result;
  w3?: W3Result;
}

/** Steps and wall time as a result row, with steps/s. */
export function throughput(steps: number, ms: number): W3Result {
  return { steps, wallMs: Math.round(ms), stepsPerSec: Math.round((steps / ms) * 1000) };
}

/** p50 and p99 (nearest rank) of hand-off samples in milliseconds. */
export function handoffOf(samples: readonly number[]): Handoff {
  const sorted = ascending(samples);
  return { p50: round1(nearestRank(sorted, 0.5) ?? NaN), p99: round1(nearestRank(sorted, 0.99) ?? NaN), samples: sorted.length };
}

/** A chain partition's key, as the definitions of every system name them. */
export const chainKey = (i: number): string => `c${String(i).padStart(5, "0")}`;

/**
 * Counts steps as a peer's handlers run them: when each upstream's code ended and each downstream's began (the
 * hand-off), and promises that settle once a number of steps of a kind have ended.
 */
export class StepLedger {
  readonly #upstreamEnded = new Map<string, number>();
  readonly #handoffs: number[] = [];
  readonly #ended = new Map<string, number>();
  readonly #waiters: { kind: string; count: number; resolve: () => void }[] = [];

  /** An upstream step's code has ended; `downstream` names the step it hands off to. */
  upstreamEnded(downstream: string): void {
    this.#upstreamEnded.set(downstream, performance.now());
  }

  /** A step's code begins; when an upstream handed off to it, the hand-off is recorded. */
  started(step: string): void {
    const since = this.#upstreamEnded.get(step);
    if (since === undefined) return;
    this.#upstreamEnded.delete(step);
    this.#handoffs.push(performance.now() - since);
  }

  /** A step of `kind` has ended. */
  ended(kind: string): void {
    const count = (this.#ended.get(kind) ?? 0) + 1;
    this.#ended.set(kind, count);
    for (const w of this.#waiters.filter((w) => w.kind === kind && w.count <= count)) {
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve();
    }
  }

  /** Settles once `count` steps of `kind` have ended. */
  until(kind: string, count: number): Promise<void> {
    if ((this.#ended.get(kind) ?? 0) >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ kind, count, resolve }));
  }

  handoff(): Handoff {
    return handoffOf(this.#handoffs);
  }
}
