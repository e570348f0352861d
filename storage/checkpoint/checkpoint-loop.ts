// Schedules checkpoints: one every `intervalMs`, never two at once (a slow upload delays the next
// one), and at once when someone waits for an epoch (`--durability remote`: DML returns only when
// a complete checkpoint in the object store holds its epoch). Waiters share checkpoints: everyone
// waiting when a cut is taken is released by that one checkpoint. A failed attempt fails the
// waiters that were waiting for it with a clear error (their change is committed locally, not yet
// remotely) and the loop tries again after a short pause.
//
// stop() waits for a running checkpoint at most `stopTimeoutMs`, then abandons it: `abandon`
// closes the object store, so its requests stop at once and the checkpoint fails (its failed row
// says it was abandoned). Nothing is lost: the state is committed on the local disk, and the next
// start's first checkpoint uploads it (the sweep removes what the abandoned one left behind).

import { setTimeout as sleep } from 'node:timers/promises';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Epoch } from '../../sql/epoch.js';
import type { Checkpointer } from './checkpointer.js';

interface Waiter {
  readonly epoch: Epoch;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

export interface CheckpointLoopOptions {
  readonly intervalMs: number;
  /** Pause after a failed attempt before the next, even when waiters ask (default 1 s). */
  readonly retryDelayMs?: number;
  /** Reports failures (the server logs them to stderr). */
  readonly onError?: (error: unknown) => void;
  /** How long stop() waits for a running checkpoint before `abandon` (default: until it ends). */
  readonly stopTimeoutMs?: number;
  /** Makes a running checkpoint fail at once (closes its object store). */
  readonly abandon?: () => void;
}

/** A checkpoint stop() gave up waiting for. */
export class CheckpointAbandonedError extends Error {
  override readonly name = 'CheckpointAbandonedError';
}

export class CheckpointLoop {
  private readonly checkpointer: Checkpointer;
  private readonly options: CheckpointLoopOptions;
  private waiters: Waiter[] = [];
  private wake: (() => void) | undefined;
  private requested = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private checkpointing = false;
  private abandonedAfterMs: number | undefined;

  constructor(checkpointer: Checkpointer, options: CheckpointLoopOptions) {
    this.checkpointer = checkpointer;
    this.options = options;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Resolves once a complete remote checkpoint holds `epoch`; rejects if the attempt for it fails. */
  waitForEpoch(epoch: Epoch): Promise<void> {
    if (this.checkpointer.lastEpoch >= epoch) return Promise.resolve();
    if (this.stopped) return Promise.reject(new SqlError(SqlState.adminShutdown, 'the server is shutting down; the change is committed locally but not yet in the object store'));
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ epoch, resolve, reject });
      this.requestCheckpoint();
    });
  }

  /** Takes a checkpoint as soon as the running one (if any) is done. */
  requestCheckpoint(): void {
    this.requested = true;
    this.wake?.();
  }

  /** Stops scheduling and waits for a running checkpoint to finish (or abandons it, see above). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    const running = this.running;
    const limitMs = this.options.stopTimeoutMs;
    if (running !== undefined && this.checkpointing && limitMs !== undefined && this.options.abandon !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([running.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), limitMs)))]);
      clearTimeout(timer);
      if (!finished) {
        this.abandonedAfterMs = limitMs;
        this.options.abandon();
      }
    }
    await running;
    for (const waiter of this.waiters) waiter.reject(new SqlError(SqlState.adminShutdown, 'the server is shutting down; the change is committed locally but not yet in the object store'));
    this.waiters = [];
  }

  private async pauseUntilDue(delayMs: number): Promise<void> {
    if (this.requested || this.stopped) return;
    const controller = new AbortController();
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      sleep(delayMs, undefined, { signal: controller.signal }).then(resolve, resolve);
    });
    controller.abort();
    this.wake = undefined;
  }

  private async run(): Promise<void> {
    let delayMs = this.options.intervalMs;
    while (!this.stopped) {
      await this.pauseUntilDue(delayMs);
      if (this.stopped) break;
      this.requested = false;
      const waiting = this.waiters;
      this.waiters = [];
      try {
        this.checkpointing = true;
        await this.checkpointer.checkpoint();
        delayMs = this.options.intervalMs;
        const last = this.checkpointer.lastEpoch;
        for (const waiter of waiting) {
          if (waiter.epoch <= last) waiter.resolve();
          else this.waiters.push(waiter);
        }
      } catch (caught) {
        const error =
          this.abandonedAfterMs === undefined
            ? caught
            : new CheckpointAbandonedError(
                `checkpoint abandoned at shutdown after ${this.abandonedAfterMs} ms: ${caught instanceof Error ? caught.message : String(caught)}; ` +
                  'the state is committed on the local disk and the next start uploads it',
                { cause: caught },
              );
        this.options.onError?.(error);
        const message = error instanceof Error ? error.message : String(error);
        for (const waiter of waiting) {
          waiter.reject(
            new SqlError(SqlState.ioError, 'the change is committed locally, but the checkpoint that would put it in the object store failed', {
              detail: message,
              hint: 'the next checkpoint retries; see oxbow_catalog.checkpoints',
            }),
          );
        }
        delayMs = Math.min(this.options.intervalMs, this.options.retryDelayMs ?? 1000);
        if (this.waiters.length > 0 && !this.stopped) await sleep(this.options.retryDelayMs ?? 1000);
      } finally {
        this.checkpointing = false;
      }
      if (this.waiters.length > 0) this.requested = true;
    }
  }
}
