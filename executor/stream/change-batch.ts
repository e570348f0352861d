// A batch of changes: rows and their signs (+1 insert, -1 delete; an update is a delete of the old
// row and an insert of the new one). Operators exchange these, never single rows. Two parallel
// arrays rather than an object per change, so a batch costs two allocations.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { RelationDef } from '../../sql/catalog.js';
import { KeyMap } from '../expr/row-hash.js';

export interface ChangeBatch {
  readonly rows: Row[];
  readonly signs: number[];
  /**
   * The unique stream key of each row, parallel to `rows`: the hidden row id of the append-only
   * source the rows come from (see `appendOnlyRowId`). Only the scan of such a source sets it, and
   * only StreamFilter / StreamProject carry it on, so it is there for a plan node in every batch
   * or in none (`carriesRowIds`). Rows of a batch with ids are fresh arrays the batch owns.
   * StreamMaterialize stores them under `row ++ id` with no lookup (blind inserts).
   */
  readonly ids?: Value[];
  /**
   * The rows and the batch's arrays are held by nothing else, and one scan reads them on their way
   * to a view that encodes them at once: a replayed generator source's new rows (set by
   * StreamManager.push only). That scan narrows the rows in place instead of copying them.
   */
  readonly rowsOwned?: boolean;
  /**
   * Set by a scan that narrowed such rows in place: the slots each row was made with (its
   * relation's full width), so the projection above it may write a wider row into it without
   * growing the array (project.ts).
   */
  readonly rowCapacity?: number;
}

/**
 * The position of the hidden row id of a relation whose rows are only ever appended (a source
 * without a primary key: DML is refused and its connector only inserts, each row with a new id
 * from the process's RowIdAllocator), else undefined.
 */
export function appendOnlyRowId(relation: RelationDef): number | undefined {
  if (relation.kind !== 'source' || relation.primaryKey.length !== 1) return undefined;
  const position = relation.primaryKey[0]!;
  const column = relation.columns[position];
  return column !== undefined && column.hidden === true && column.type.name === 'int8' ? position : undefined;
}

/**
 * An array for `length` values written in order from index 0 (`array[i] = value`): allocated at
 * that length, so a batch's array is not grown a push at a time (each growth copies it and leaves
 * the old store as garbage). Above V8's limit for a preallocated fast array (`new Array(n)` past
 * about 100,000 elements is a dictionary) it starts empty and the writes in order append.
 */
export function arrayFor<T>(length: number): T[] {
  return length <= PREALLOCATED_MAX ? new Array<T>(length) : [];
}

/** `length` copies of `sign` (a batch's signs). */
export function signsFor(length: number, sign: number): number[] {
  const signs = arrayFor<number>(length);
  for (let i = 0; i < length; i++) signs[i] = sign;
  return signs;
}

const PREALLOCATED_MAX = 65_536;

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
