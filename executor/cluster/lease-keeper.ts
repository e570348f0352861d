// The node's etcd lease, kept alive off the main thread: a worker thread (lease-keeper-worker.ts)
// with an etcd client of its own grants the lease and sends its keep-alives, so a statement that
// blocks the main thread for longer than the TTL does not cost the leader its lease (with the
// keep-alive on the main thread, a 6 s statement under a 2 s TTL fenced the leader:
// test/cluster/blocked-leader.test.ts). The time etcd last confirmed the lease is in shared memory:
// the watchdog (cluster-node.ts) reads it current even right after a long block, before any
// message from the worker could be handled. The main thread writes a heartbeat there every 100 ms,
// and while it blocks waiting on its dataflow's worker threads (worker-handle.ts, each wait bounded
// by its answer's deadline); a main thread silent for longer than `stallMs` (a process that is
// stuck, not busy with one statement) makes the worker give the lease up, so it expires and another
// node takes over.

import { Worker } from 'node:worker_threads';
import { compiledWorkerScript } from '../batch/worker-script.js';
import { setBlockedWaitBeat } from '../stream/parallel/worker-handle.js';

export const RENEWED_SLOT = 0;
export const HEARTBEAT_SLOT = 1;

export interface KeeperWorkerData {
  readonly endpoints: readonly string[];
  readonly leaseTtlSeconds: number;
  readonly callTimeoutMs: number;
  readonly stallMs: number;
  readonly shared: SharedArrayBuffer;
}

export type KeeperRequest = { readonly type: 'grant'; readonly requestId: number } | { readonly type: 'revoke'; readonly requestId: number } | { readonly type: 'close' };

export type KeeperEvent =
  | { readonly type: 'granted'; readonly requestId: number; readonly id: string }
  | { readonly type: 'done'; readonly requestId: number }
  | { readonly type: 'failed'; readonly requestId: number; readonly message: string }
  | { readonly type: 'lost'; readonly message: string };

export interface LeaseKeeperOptions {
  readonly endpoints: readonly string[];
  readonly leaseTtlSeconds: number;
  readonly callTimeoutMs: number;
  /** A main thread silent this long gives its lease up (default 30 s). */
  readonly stallMs?: number;
}

export const DEFAULT_STALL_MS = 30_000;

export class LeaseKeeper {
  private readonly worker: Worker;
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(16));
  private readonly heartbeat: NodeJS.Timeout;
  private readonly pending = new Map<number, { resolve: (value: string | undefined) => void; reject: (error: Error) => void }>();
  private nextRequest = 1;
  private closed = false;
  /** Told when the lease is lost (keep-alives failed past the TTL, it expired, or the main thread stalled). */
  onLost: (error: Error) => void = () => undefined;

  constructor(options: LeaseKeeperOptions) {
    this.beat();
    const data: KeeperWorkerData = {
      endpoints: options.endpoints,
      leaseTtlSeconds: options.leaseTtlSeconds,
      callTimeoutMs: options.callTimeoutMs,
      stallMs: options.stallMs ?? DEFAULT_STALL_MS,
      shared: this.shared.buffer as SharedArrayBuffer,
    };
    this.worker = new Worker(compiledWorkerScript(import.meta.url, './lease-keeper-worker.js'), { workerData: data });
    this.worker.unref();
    this.worker.on('message', (event: KeeperEvent) => this.handle(event));
    this.worker.on('error', (error) => this.failAll(error));
    this.worker.on('exit', () => {
      const error = new Error('the lease keeper thread exited');
      this.failAll(error);
      if (!this.closed) this.onLost(error);
    });
    this.heartbeat = setInterval(() => this.beat(), 100);
    this.heartbeat.unref();
    setBlockedWaitBeat(this.beatWhileBlocked);
  }

  private readonly beatWhileBlocked = (): void => this.beat();

  private beat(): void {
    Atomics.store(this.shared, HEARTBEAT_SLOT, BigInt(Date.now()));
  }

  /** When etcd last confirmed the lease (its grant's request or a keep-alive answer), by this process's clock. */
  get renewedAt(): number {
    return Number(Atomics.load(this.shared, RENEWED_SLOT));
  }

  /** Grants a new lease (the previous one, if any, is released); resolves with its id (decimal). */
  async grant(): Promise<string> {
    return (await this.request('grant'))!;
  }

  /** Gives the lease back (its keys go at once). */
  async revoke(): Promise<void> {
    await this.request('revoke');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    setBlockedWaitBeat(undefined);
    this.worker.postMessage({ type: 'close' } satisfies KeeperRequest);
  }

  private request(type: 'grant' | 'revoke'): Promise<string | undefined> {
    if (this.closed) return Promise.reject(new Error('the lease keeper is closed'));
    const requestId = this.nextRequest++;
    return new Promise((resolve, reject) => {
      this.pending.set(requestId, { resolve, reject });
      this.worker.postMessage({ type, requestId } satisfies KeeperRequest);
    });
  }

  private handle(event: KeeperEvent): void {
    if (event.type === 'lost') {
      this.onLost(new Error(event.message));
      return;
    }
    const waiter = this.pending.get(event.requestId);
    if (waiter === undefined) return;
    this.pending.delete(event.requestId);
    if (event.type === 'failed') waiter.reject(new Error(event.message));
    else waiter.resolve(event.type === 'granted' ? event.id : undefined);
  }

  private failAll(error: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}
