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
  /** When wallMs is the median of several runs (bench/peers.ts): each run's wall time. */
  readonly samplesMs?: readonly number[];
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

/** What a peer's benchmark answers: each workload run once, from enqueueing its first jobs to its end. */
export interface PeerBench {
  w1(): Promise<W1Result>;
  w2(): Promise<W2Result>;
  w3(): Promise<W3Result>;
}

/** How a peer takes jobs: the job names are the steps' (a, b, c; root, child, join; burst). */
export interface PeerQueue {
  /** Enqueues one job named `name` per payload, in one call. */
  enqueue(name: string, payloads: readonly object[]): Promise<void>;
  /** Once the last step's code has run: until the peer has recorded every completion (e.g. a batch flushed). */
  settled(): Promise<void>;
  /** Sets W2's fan-in counter to `children`: the child that brings it to zero enqueues the join. */
  armFanIn(children: number): Promise<void>;
}

/**
 * W1–W3 on a peer whose handlers report to `ledger` (an upstream's end before it enqueues its downstream job, a
 * downstream's start, every job's end): each workload enqueues its first jobs, waits for its last steps' ends and
 * the peer's completions, and times that.
 */
export class PeerWorkloads implements PeerBench {
  ledger = new StepLedger();

  constructor(private readonly queue: PeerQueue) {}

  /** One job through the peer: its connections and prepared statements are ready before the first workload. */
  async warmUp(): Promise<void> {
    await this.timed("burst", [{}], "burst", 1);
  }

  async w1(): Promise<W1Result> {
    const chains = Array.from({ length: W1_CHAINS }, (_, i) => ({ p: chainKey(i) }));
    const ms = await this.timed("a", chains, "c", W1_CHAINS);
    return { ...throughput(3 * W1_CHAINS, ms), handoffMs: this.ledger.handoff() };
  }

  async w2(): Promise<W2Result> {
    await this.queue.armFanIn(W2_CHILDREN);
    const ms = await this.timed("root", [{}], "join", 1);
    return { steps: W2_CHILDREN + 2, wallMs: Math.round(ms) };
  }

  async w3(): Promise<W3Result> {
    return throughput(
      W3_STEPS,
      await this.timed(
        "burst",
        Array.from({ length: W3_STEPS }, () => ({})),
        "burst",
        W3_STEPS,
      ),
    );
  }

  /** Enqueues `payloads` as `name` jobs, waits for `count` ends of `kind` and the peer's completions; the time taken. */
  private async timed(name: string, payloads: readonly object[], kind: string, count: number): Promise<number> {
    this.ledger = new StepLedger();
    const done = this.ledger.until(kind, count);
    const started = performance.now();
    await this.queue.enqueue(name, payloads);
    await done;
    await this.queue.settled();
    return performance.now() - started;
  }
}
