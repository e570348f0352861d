// The committed changes of a table or view between two epochs, from its versions (the MVCC
// history the store keeps for time travel): a version that became valid in (from, to] is an
// insert at that epoch, one that stopped being valid in (from, to] a delete. Changes come out in
// epoch order, deletes before inserts within an epoch, so an update reads as delete + insert of
// one key. The history must still be retained (--time-travel-retention): a sink further behind
// gets a clear error. lastChangesBetween: per key only the last change, for upsert targets.

import { compareValues } from '../../sql/compare.js';
import type { Epoch } from '../../sql/epoch.js';
import { formatValue } from '../../sql/functions.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { RowVersion, StateTable } from '../../storage/state-table.js';

export interface EpochChanges {
  readonly epoch: Epoch;
  readonly deletes: Row[];
  readonly inserts: Row[];
}

export function changesBetween(table: StateTable, from: Epoch, to: Epoch): EpochChanges[] {
  const byEpoch = new Map<Epoch, EpochChanges>();
  const at = (epoch: Epoch): EpochChanges => {
    let changes = byEpoch.get(epoch);
    if (changes === undefined) byEpoch.set(epoch, (changes = { epoch, deletes: [], inserts: [] }));
    return changes;
  };
  for (const version of table.versions(from, to)) {
    if (version.validFrom > from && version.validFrom <= to) at(version.validFrom).inserts.push(version.row);
    if (version.validTo !== null && version.validTo > from && version.validTo <= to) at(version.validTo).deletes.push(version.row);
  }
  return [...byEpoch.values()].sort((a, b) => (a.epoch < b.epoch ? -1 : a.epoch > b.epoch ? 1 : 0));
}

/** Per key, the last change between two epochs: what an upsert target applies. */
export interface KeyedChanges {
  /** Rows live at `to` that became so after `from` (new or changed keys). */
  readonly upserts: Row[];
  /** The last version of each key deleted by `to` (keys gone). */
  readonly deletes: Row[];
}

/**
 * The last change of each key (`key`: positions in the rows, of types `keyTypes`) in (from, to]:
 * what the changes of changesBetween() leave per key when applied in order. When the key is the
 * table's own (its stored primary key), versions arrive grouped by key, and each key's last
 * version settles it with no map (a version still valid at `to` that began after `from` is an
 * upsert, one that ended by `to` a delete); any other key collapses the changes by key text.
 */
export function lastChangesBetween(table: StateTable, from: Epoch, to: Epoch, key: readonly number[], keyTypes: readonly DataType[]): KeyedChanges {
  if (!isStoredKey(table, key)) return collapseByKey(changesBetween(table, from, to), key, keyTypes);
  const upserts: Row[] = [];
  const deletes: Row[] = [];
  let last: RowVersion | undefined;
  for (const version of table.versions(from, to)) {
    // A version valid until now is the newest of its key: the next one starts another key.
    if (last !== undefined && (last.validTo === null || !sameKey(last.row, version.row, key, keyTypes))) {
      if (last.validTo !== null && last.validTo <= to) deletes.push(last.row);
      else if (last.validFrom > from) upserts.push(last.row);
    }
    last = version;
  }
  if (last !== undefined) {
    if (last.validTo !== null && last.validTo <= to) deletes.push(last.row);
    else if (last.validFrom > from) upserts.push(last.row);
  }
  return { upserts, deletes };
}

/** Whether `key` is the table's stored key (the same columns in any order): its versions come grouped by it. */
function isStoredKey(table: StateTable, key: readonly number[]): boolean {
  const stored = table.schema.primaryKey;
  return stored.length === key.length && key.every((position) => stored.includes(position));
}

function sameKey(a: Row, b: Row, key: readonly number[], keyTypes: readonly DataType[]): boolean {
  for (let index = 0; index < key.length; index++) {
    const x = a[key[index]!] ?? null;
    const y = b[key[index]!] ?? null;
    if (x === y) continue;
    if (x === null || y === null || typeof x !== 'object' || compareValues(x, y, keyTypes[index]!) !== 0) return false;
  }
  return true;
}

/** The changes applied in order per key: the last one of each key wins (a key deleted and inserted again is one upsert). */
export function collapseByKey(changes: readonly EpochChanges[], key: readonly number[], keyTypes: readonly DataType[]): KeyedChanges {
  // One column of a primitive type keys the map by its value; others by their text.
  const single = key.length === 1 ? key[0]! : -1;
  const keyOf = (row: Row): unknown => {
    if (single >= 0) {
      const value = row[single] ?? null;
      if (value === null || typeof value !== 'object') return value;
    }
    let text = '';
    for (let index = 0; index < key.length; index++) {
      const value = row[key[index]!] ?? null;
      text += value === null ? '\u0000N' : `\u0000V${formatValue(value, keyTypes[index]!)}`;
    }
    return text;
  };
  const last = new Map<unknown, { row: Row; deleted: boolean }>();
  for (const change of changes) {
    for (const row of change.deletes) last.set(keyOf(row), { row, deleted: true });
    for (const row of change.inserts) last.set(keyOf(row), { row, deleted: false });
  }
  const upserts: Row[] = [];
  const deletes: Row[] = [];
  for (const { row, deleted } of last.values()) (deleted ? deletes : upserts).push(row);
  return { upserts, deletes };
}

/**
 * The last epoch a sink may deliver: the committed one, or the last complete remote checkpoint's
 * when that is lower (`connector-host.ts`' `remoteCheckpointEpoch`: 0 before the first one).
 */
export function deliverableEpoch(host: { readonly store: { readonly committedEpoch: Epoch }; readonly remoteCheckpointEpoch?: (() => Epoch) | undefined }): Epoch {
  const committed = host.store.committedEpoch;
  const checkpointed = host.remoteCheckpointEpoch?.();
  return checkpointed !== undefined && checkpointed < committed ? checkpointed : committed;
}
