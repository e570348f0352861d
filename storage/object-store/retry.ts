// Retries with exponential backoff and full jitter for object-store calls. Only failures that can
// pass (ObjectStoreError Unavailable: network, timeouts, throttling, 5xx) are retried; a permission
// error or a missing bucket fails at once with its clear message. `onRetry` lets the caller count
// retries in its metrics.

import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectStoreError } from './object-store.js';

export interface RetryPolicy {
  /** Total attempts including the first. */
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly onRetry?: (error: ObjectStoreError, attempt: number) => void;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 5, baseDelayMs: 100, maxDelayMs: 5_000 };

export async function withRetries<T>(policy: RetryPolicy, operation: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof ObjectStoreError) || !error.retryable || attempt >= policy.attempts) throw error;
      policy.onRetry?.(error, attempt);
      const ceilingMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
      await sleep(Math.random() * ceilingMs);
    }
  }
}
