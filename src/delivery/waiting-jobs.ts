import type { RunnableJob } from './delivery-jobs.ts';

/** Jobs taken already leased, waiting for a delivery slot, in arrival order, counted per target. */
export class WaitingJobs {
  readonly #jobs: RunnableJob[] = [];
  /** How many wait for each target, so that a target with no room costs no scan of the jobs. */
  readonly #perTarget = new Map<string, number>();

  get length(): number {
    return this.#jobs.length;
  }

  /** The job at `index` in arrival order. */
  at(index: number): RunnableJob | undefined {
    return this.#jobs[index];
  }

  has(id: string): boolean {
    return this.#jobs.some(({ job }) => job.id === id);
  }

  /** Whether any of them is for `target`. */
  holdsFor(target: string): boolean {
    return this.#perTarget.has(target);
  }

  ids(): string[] {
    return this.#jobs.map(({ job }) => job.id);
  }

  add(runnables: readonly RunnableJob[]): void {
    for (const runnable of runnables) {
      this.#jobs.push(runnable);
      const target = runnable.job.target_id;
      this.#perTarget.set(target, (this.#perTarget.get(target) ?? 0) + 1);
    }
  }

  take(start: number, count: number): RunnableJob[] {
    const taken = this.#jobs.splice(start, count);
    for (const { job } of taken) {
      const left = this.#perTarget.get(job.target_id)! - 1;
      if (left > 0) this.#perTarget.set(job.target_id, left);
      else this.#perTarget.delete(job.target_id);
    }
    return taken;
  }

  /** Jobs that could start once slots are open: per target, as many as `roomOf` it says it has room for. */
  launchable(roomOf: (target: string) => number): number {
    let launchable = 0;
    for (const [target, count] of this.#perTarget) launchable += Math.min(count, Math.max(0, roomOf(target)));
    return launchable;
  }
}
