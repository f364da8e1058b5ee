// Fair turns for run work on the one event loop. A run that waits for a turn resumes in a later loop iteration,
// one run per iteration, first come first served: between two turns Node serves timers and sockets (new requests,
// SSE writes). Yielding with a bare setImmediate is not enough under load: every run that yielded in one iteration
// resumes in the same check phase, so 64 runs of a few ms each held the loop for ~600 ms (event-loop delay p99 at
// 64 concurrent zero-latency runs, measured with /metrics).

/** Hands out turns; one instance per process (see {@link runTurns}). */
export class RunScheduler {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** Resolves when it is the caller's turn: in a later event-loop iteration, after the runs that asked before. */
  turn(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.next);
      }
    });
  }

  /** Runs waiting for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  // One turn per check phase: an immediate scheduled from an immediate runs in the next loop iteration.
  private readonly next = (): void => {
    this.waiting.shift()?.();
    if (this.waiting.length) setImmediate(this.next);
    else this.scheduled = false;
  };
}

/** The process's scheduler, shared by every run's worker. */
export const runTurns = new RunScheduler();
