// The committed changes of a table or view between two epochs, from its versions (the MVCC
// history the store keeps for time travel): a version that became valid in (from, to] is an
// insert at that epoch, one that stopped being valid in (from, to] a delete. Changes come out in
// epoch order, deletes before inserts within an epoch, so an update reads as delete + insert of
// one key. The history must still be retained (--time-travel-retention): a sink further behind
// gets a clear error.

import type { Epoch } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { StateTable } from '../../storage/state-table.js';

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
