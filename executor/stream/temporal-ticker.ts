// The barrier loop of views with temporal filters: their contents change as time passes, so an
// epoch must commit every --barrier-interval-ms even when nothing was written. Each tick takes the
// write lock and commits an epoch when some view has a temporal filter (the commit's flush hands the
// epoch time to every temporal filter, StreamManager.flush); otherwise it does nothing.

import type { StreamManager } from './stream-manager.js';

/** What the ticker needs of the engine core (executor/engine/engine-core.ts). */
export interface TickTarget {
  readonly streams: StreamManager;
  readonly writeLock: { run<T>(section: () => Promise<T> | T): Promise<T> };
  readonly store: { abort(): void };
  commitDurable(): Promise<unknown>;
}

export class TemporalTicker {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;

  constructor(
    readonly core: TickTarget,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.ticking === undefined && this.core.streams.ticking) this.ticking = this.tick().finally(() => (this.ticking = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One barrier: commit an epoch if some view has a temporal filter. */
  async tick(): Promise<void> {
    await this.core.writeLock.run(async () => {
      if (this.closed || !this.core.streams.ticking) return;
      try {
        await this.core.commitDurable();
      } catch (error) {
        this.core.store.abort();
        process.stderr.write(`oxbow: the barrier of temporal filters failed: ${error instanceof Error ? error.message : String(error)}\n`);
      }
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.ticking;
  }
}
