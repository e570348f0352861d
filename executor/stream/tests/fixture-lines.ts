// The operator fixtures' text form, shared by operators.test.ts and hash-join.test.ts: input
// changes written as `+ 1 2 3` lines, output changes read back as sorted `+ a | b` lines.

import type { Row } from '../../../sql/value.js';
import { formatChanges, type ChangeBatch } from '../change-batch.js';

/** `+ 1 2 3` lines to a batch of full table rows (`NULL` is null, everything else a number). */
export function changes(...lines: string[]): ChangeBatch {
  const rows: Row[] = [];
  const signs: number[] = [];
  for (const line of lines) {
    const [sign, ...values] = line.trim().split(/\s+/);
    rows.push(values.map((value) => (value === 'NULL' ? null : Number(value))));
    signs.push(sign === '+' ? 1 : -1);
  }
  return { rows, signs };
}

/** The view's output without its duplicate-number column, as sorted fixture lines. */
export function output(batch: ChangeBatch): string[] {
  return formatChanges({ rows: batch.rows.map((row) => row.slice(0, -1)), signs: batch.signs }).sort();
}
