// Per-user run slots: how many runs a user has in flight, and the atomic take of one under
// `limits.max_concurrent_runs_per_user`. In process memory for one process (SQLite); in PostgreSQL
// (pg-run-slots.ts) when processes share the database, so the cap is the service's.

/** A taken slot (call `release` once, when the run has finished), or the refusal with how many are held. */
export type SlotTake = { release: () => void } | { held: number };

/** Where run slots are counted. */
export interface RunSlots {
  /**
   * Takes one slot for `userId` unless `max` (null: no cap) are held already, as one atomic step.
   * @throws the store's error (the run is then refused: a cap is never skipped).
   */
  take(userId: string, max: number | null): SlotTake | Promise<SlotTake>;
  /** Slots `userId` holds now (runs pending or running). */
  held(userId: string): number | Promise<number>;
  /** Stops background work and gives back this process's slots. */
  close(): Promise<void>;
}

/** Slots in process memory: {@link take} is synchronous, so two requests never both take the last one. */
export class LocalRunSlots implements RunSlots {
  private readonly active = new Map<string, number>();

  take(userId: string, max: number | null): SlotTake {
    const current = this.held(userId);
    if (max && current >= max) return { held: current };
    this.active.set(userId, current + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.active.get(userId) ?? 1) - 1;
        if (left > 0) this.active.set(userId, left);
        else this.active.delete(userId);
      },
    };
  }

  held(userId: string): number {
    return this.active.get(userId) ?? 0;
  }

  async close(): Promise<void> {}
}
