/**
 * A retrying job queue for background work.
 */
import { EventEmitter } from "node:events";

export type Job = { id: string; attempts: number; run: () => Promise<void> };

/** Runs jobs one at a time, putting failed ones back with one more attempt. */
export class RetryQueue extends EventEmitter {
  private readonly pending: Job[] = [];

  constructor(private readonly maxAttempts: number = 3) {
    super();
  }

  /** Adds a job to the back of the queue. */
  enqueue(job: Job): void {
    this.pending.push(job);
    this.emit("queued", job.id);
  }

  /**
   * Runs the next job; says whether there was one.
   */
  @logged
  async runNext(): Promise<boolean> {
    const job = this.pending.shift();
    if (job === undefined) {
      return false;
    }

    try {
      await job.run();
    } catch (error) {
      if (job.attempts + 1 < this.maxAttempts) {
        this.pending.push({ ...job, attempts: job.attempts + 1 });
      }
    }
    return true;
  }
}

/** The delay before the given attempt, in milliseconds. */
export function backoff(attempt: number, base = 100): number {
  const jitter = Math.random() * base;

  return base * 2 ** attempt + jitter;
}
