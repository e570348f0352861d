// What the Nexmark smoke suites share: a query run by bench/nexmark.ts's own engine code, its
// engine handed to the test before it closes, and rows compared as multisets.

import { expect } from 'vitest';
import { runNexmarkQuery, type NexmarkRunOptions, type NexmarkRunResult } from '../../bench/nexmark.js';

/** The CI size of the smoke runs: 2 splits, 512-row chunks, 50 ms barriers. */
export const SMOKE = { splits: 2, chunkSize: 512, barrierIntervalMs: 50 } as const;

/** Runs the query and `inspect` on its engine before the engine closes; fails unless `inspect` ran to its end. */
export async function runAndInspect(options: Omit<NexmarkRunOptions, 'inspect'>, inspect: (run: (sql: string) => Promise<unknown[][]>) => Promise<void>): Promise<NexmarkRunResult> {
  let checked = false;
  const result = await runNexmarkQuery({
    ...options,
    inspect: async (run) => {
      await inspect(run);
      checked = true;
    },
  });
  expect(checked).toBe(true);
  return result;
}

/** Rows as sorted JSON lines (bigints marked): a view and its batch query compare as multisets. */
export function canonical(rows: unknown[][]): string[] {
  return rows.map((row) => JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value))).sort();
}
