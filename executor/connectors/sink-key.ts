// Which columns key a sink's messages (UPSERT and DEBEZIUM keys; PLAIN too when given): RisingWave's
// `primary_key = 'a,b'` option, else the relation's own primary key. A table's or connector table's
// key is its declared one; a materialized view's (or a sink AS query's) is the key it is stored by
// (planner/stream/unique-key.ts: a GROUP BY's group keys, a table's primary key through filters and
// projections, ...), so a changed row of one key reads as one upsert, or, when no key is known,
// the whole row plus the hidden duplicate number, so a changed row reads as delete + create.
// The named columns must be unique among the relation's live rows (as in RisingWave, not checked):
// rows sharing a key overwrite each other downstream.

import type { ColumnDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';

/** Positions in `columns` of the key columns: the `primary_key` option's, else `fallback`. */
export function sinkKeyPositions(options: Readonly<Record<string, string>> | undefined, relationName: string, columns: readonly ColumnDef[], fallback: readonly number[]): readonly number[] {
  const text = options?.['primary_key'];
  if (text === undefined) return fallback;
  const names = text.split(',').map((name) => name.trim());
  if (names.some((name) => name === '')) {
    throw new SqlError(SqlState.invalidParameterValue, `invalid value for "primary_key": "${text}"`, { hint: "Name the key columns separated by commas, e.g. primary_key = 'a,b'." });
  }
  const positions: number[] = [];
  for (const name of names) {
    // Exact spelling first, then as an unquoted identifier folds (lower case).
    let position = columns.findIndex((column) => !column.hidden && column.name === name);
    if (position < 0) position = columns.findIndex((column) => !column.hidden && column.name === name.toLowerCase());
    if (position < 0) {
      throw new SqlError(SqlState.undefinedColumn, `column "${name}" named in primary_key does not exist in "${relationName}"`, {
        hint: `Its columns: ${columns.filter((column) => !column.hidden).map((column) => column.name).join(', ')}.`,
      });
    }
    if (positions.includes(position)) throw new SqlError(SqlState.duplicateColumn, `column "${name}" appears more than once in primary_key`);
    positions.push(position);
  }
  return positions;
}
