// Deadlines and retries for object-store calls. Every attempt (one request: a put, a get, a list
// page, a delete, one part of a multipart upload) has a deadline, `timeoutMs` (default 60 s, the
// engine's objectStoreTimeoutMs, the CLI's --object-store-timeout-ms): at the deadline the attempt
// is aborted through its AbortSignal (the AWS SDK cancels the request and its socket) and the
// caller stops waiting for it (a file operation cannot be cancelled: its result is ignored). A
// timed-out attempt is an ObjectStoreError Unavailable with `timedOut` set, retried like any other
// failure that can pass (network, throttling, 5xx) with exponential backoff and full jitter; a
// permission error or a missing bucket fails at once with its clear message. `onRetry` and
// `onTimeout` let the caller count them in its metrics.
//
// `closed` (the store's close()) stops everything at once: the running attempt is aborted, no
// retry follows, and the call fails with ObjectStoreError Failed saying the store was closed (a
// shutdown abandons a checkpoint this way).

import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectStoreError } from './object-store.js';

/** The deadline of one object-store request when the operator sets none. */
export const DEFAULT_OBJECT_STORE_TIMEOUT_MS = 60_000;

export interface RetryPolicy {
  /** Total attempts including the first. */
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Deadline of each attempt in milliseconds (default DEFAULT_OBJECT_STORE_TIMEOUT_MS; 0: none). */
  readonly timeoutMs?: number;
  /** Told before each retry: the failure, the attempt that failed (1-based) and the attempts allowed. */
  readonly onRetry?: (error: ObjectStoreError, attempt: number, attempts: number) => void;
  /** Told of each attempt that passed its deadline (before onRetry). */
  readonly onTimeout?: (error: ObjectStoreError) => void;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 5, baseDelayMs: 100, maxDelayMs: 5_000 };

export interface AttemptContext {
  /** What the call does, for the timeout's message ("cannot store sst/x in s3://b/p"). */
  readonly action: string;
  readonly key?: string;
  /** Aborted when the store is closed: the call stops at once. */
  readonly closed?: AbortSignal;
}

function closedError(context: AttemptContext | undefined): ObjectStoreError {
  const action = context?.action ?? 'object store call';
  return new ObjectStoreError('Failed', `${action}: the object store was closed (shutdown) before the call finished`, { key: context?.key });
}

/**
 * One attempt: the signal aborts it; `progress()` moves the deadline `timeoutMs` past now (a
 * download that keeps receiving bytes is alive however large the object, the deadline catches one
 * that stalls).
 */
export type Attempt<T> = (signal: AbortSignal, progress: () => void) => Promise<T>;

/**
 * Runs one attempt with a deadline: resolves or rejects as `operation` does, or rejects with a
 * timed-out ObjectStoreError Unavailable at the deadline (aborting the attempt's signal), or with
 * Failed when `closed` is aborted. An operation that ignores its signal is left running, unheard.
 */
export function withDeadline<T>(timeoutMs: number, operation: Attempt<T>, context?: AttemptContext): Promise<T> {
  const closed = context?.closed;
  if (closed?.aborted === true) return Promise.reject(closedError(context));
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      closed?.removeEventListener('abort', onClosed);
      return true;
    };
    const onClosed = (): void => {
      if (!finish()) return;
      controller.abort(closedError(context));
      reject(closedError(context));
    };
    const onDeadline = (): void => {
      if (!finish()) return;
      const action = context?.action ?? 'object store call';
      const error = new ObjectStoreError('Unavailable', `${action}: no answer within ${timeoutMs} ms (--object-store-timeout-ms)`, { key: context?.key, timedOut: true });
      controller.abort(error);
      reject(error);
    };
    let timer = timeoutMs > 0 ? setTimeout(onDeadline, timeoutMs) : undefined;
    const progress = (): void => {
      if (settled || timer === undefined) return;
      clearTimeout(timer);
      timer = setTimeout(onDeadline, timeoutMs);
    };
    closed?.addEventListener('abort', onClosed);
    operation(controller.signal, progress).then(
      (value) => {
        if (finish()) resolve(value);
      },
      (error: unknown) => {
        if (finish()) reject(error);
      },
    );
  });
}

/** Runs `operation` with a deadline per attempt, retrying failures that can pass with backoff. */
export async function withRetries<T>(policy: RetryPolicy, operation: Attempt<T>, context?: AttemptContext): Promise<T> {
  const timeoutMs = policy.timeoutMs ?? DEFAULT_OBJECT_STORE_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await withDeadline(timeoutMs, operation, context);
    } catch (error) {
      if (error instanceof ObjectStoreError && error.timedOut) policy.onTimeout?.(error);
      if (!(error instanceof ObjectStoreError) || !error.retryable || attempt >= policy.attempts) throw error;
      if (context?.closed?.aborted === true) throw closedError(context);
      policy.onRetry?.(error, attempt, policy.attempts);
      const ceilingMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
      try {
        await sleep(Math.random() * ceilingMs, undefined, context?.closed === undefined ? undefined : { signal: context.closed });
      } catch {
        throw closedError(context);
      }
    }
  }
}
