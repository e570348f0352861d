// pg_sleep(seconds), pg_sleep_for(interval), pg_sleep_until(timestamptz): void results, as in
// PostgreSQL. The sleep itself is the caller's: the batch executor's EvalContext.sleep records the
// seconds and waits them between batches, cancellably (executor/batch/run.ts). Without that hook
// (a constant context) the thread blocks for the time asked.

import type { Interval } from '../value.js';
import type { EvalContext } from '../eval-context.js';
import { defineFunction } from './registry.js';

const MICROS_PER_DAY = 86_400_000_000;

function sleep(seconds: number, context: EvalContext): string {
  // PostgreSQL sleeps nothing for a negative or NaN duration.
  if (!(seconds > 0)) return '';
  if (context.sleep !== undefined) context.sleep(seconds);
  else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(seconds * 1000, 2 ** 31 - 1));
  return '';
}

defineFunction('pg_sleep', { args: ['float8'], returns: 'void', volatility: 'volatile', oid: 2626, impl: ([seconds], c) => sleep(seconds as number, c) });
defineFunction('pg_sleep_for', {
  args: ['interval'],
  returns: 'void',
  volatility: 'volatile',
  oid: 3935,
  // PostgreSQL: a month is 30 days here (date_part('epoch', interval)).
  impl: ([value], c) => {
    const i = value as Interval;
    return sleep((i.months * 30 * MICROS_PER_DAY + i.days * MICROS_PER_DAY + i.micros) / 1_000_000, c);
  },
});
defineFunction('pg_sleep_until', {
  args: ['timestamptz'],
  returns: 'void',
  volatility: 'volatile',
  oid: 3936,
  impl: ([until], c) => sleep(((until as number) - Date.now() * 1000) / 1_000_000, c),
});
