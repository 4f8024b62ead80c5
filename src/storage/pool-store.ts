import type { AuditEntry } from "./audit-trail.js";

/** A named slot count that steps compete for, with what uses it now. */
export interface PoolRecord {
  name: string;
  slots: number;
  /** Slots its queued and running steps hold (and deferred ones, when includeDeferred). */
  occupied: number;
  /** Scheduled steps waiting in it. */
  queued: number;
  /** Whether deferred steps keep their slots while they wait. */
  includeDeferred: boolean;
  description: string;
  updatedAt: Date;
}

export interface SetPoolSlots {
  name: string;
  /** 0 holds every step of the pool back. */
  slots: number;
  /** Left as it is when absent. */
  includeDeferred?: boolean | undefined;
}

/** Pools for the API: their occupancy, and setting their size. */
export interface PoolStore {
  /** Every pool, by name. */
  list(): Promise<PoolRecord[]>;
  /**
   * Sets a pool's slots (creating the pool if it does not exist yet, as a step
   * using it would) and wakes dispatchers, which may now hand out more steps.
   */
  setSlots(input: SetPoolSlots, now: Date, audit?: AuditEntry): Promise<PoolRecord>;
}
