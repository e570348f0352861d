// A batch of changes: rows and their signs (+1 insert, -1 delete; an update is a delete of the old
// row and an insert of the new one). Operators exchange these, never single rows. Two parallel
// arrays rather than an object per change, so a batch costs two allocations.

import type { Row } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { KeyMap } from '../batch/row-hash.js';

export interface ChangeBatch {
  readonly rows: Row[];
  readonly signs: number[];
}

export function emptyChanges(): ChangeBatch {
  return { rows: [], signs: [] };
}

export function isEmpty(changes: ChangeBatch): boolean {
  return changes.rows.length === 0;
}

/** Appends `source` to `target` (in place). */
export function appendChanges(target: ChangeBatch, source: ChangeBatch): void {
  for (let i = 0; i < source.rows.length; i++) {
    target.rows.push(source.rows[i]!);
    target.signs.push(source.signs[i]!);
  }
}

/** Rows with one sign as a batch. */
export function withSign(rows: Row[], sign: number): ChangeBatch {
  return { rows, signs: new Array<number>(rows.length).fill(sign) };
}

/**
 * The changes that turn multiset `before` into multiset `after`: rows in both cancel, so an
 * unchanged group emits nothing downstream.
 */
export function difference(before: readonly Row[], after: readonly Row[], types: readonly DataType[]): ChangeBatch {
  const counts = new KeyMap<number>(types);
  for (const row of before) add(counts, row, -1);
  for (const row of after) add(counts, row, 1);
  const out = emptyChanges();
  for (let i = 0; i < counts.size; i++) {
    const net = counts.values[i]!;
    const sign = net > 0 ? 1 : -1;
    for (let n = Math.abs(net); n > 0; n--) {
      out.rows.push(counts.keys[i]!);
      out.signs.push(sign);
    }
  }
  // Deletes first, so a consumer sees a row leave before its replacement arrives.
  return sortDeletesFirst(out);
}

function add(counts: KeyMap<number>, row: Row, sign: number): void {
  const index = counts.indexOf(row);
  if (index >= 0) counts.values[index]! += sign;
  else counts.add(row, sign);
}

function sortDeletesFirst(changes: ChangeBatch): ChangeBatch {
  if (changes.signs.every((sign) => sign < 0) || changes.signs.every((sign) => sign > 0)) return changes;
  const out = emptyChanges();
  for (const wanted of [-1, 1]) {
    for (let i = 0; i < changes.rows.length; i++) {
      if (changes.signs[i] === wanted) {
        out.rows.push(changes.rows[i]!);
        out.signs.push(wanted);
      }
    }
  }
  return out;
}

/** Readable fixture form for tests and debugging: `+ 1 | a`. */
export function formatChanges(changes: ChangeBatch): string[] {
  return changes.rows.map((row, i) => `${changes.signs[i]! > 0 ? '+' : '-'} ${row.map((value) => (value === null ? 'NULL' : String(value))).join(' | ')}`);
}
