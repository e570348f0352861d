// Row checks before a write, with PostgreSQL's errors: NOT NULL (23502, "Failing row contains
// (...)") and the primary key's uniqueness (23505, constraint "<table>_pkey", "Key (id)=(1)
// already exists."). Also fills the hidden row id of tables without a primary key.

import type { Row, Value } from '../../sql/value.js';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { formatValue } from '../../sql/functions.js';
import type { Runtime } from './runtime.js';

function text(value: Value, relation: RelationDef, column: number, runtime: Runtime): string {
  return value === null ? 'null' : formatValue(value, relation.columns[column]!.type, runtime.evalContext);
}

export function fillRowId(relation: RelationDef, row: Row, runtime: Runtime): void {
  for (const index of relation.primaryKey) {
    if (relation.columns[index]!.hidden && row[index] === null) row[index] = runtime.tables.nextRowId(relation);
  }
}

export function checkNotNull(relation: RelationDef, row: Row, runtime: Runtime): void {
  for (let i = 0; i < relation.columns.length; i++) {
    const column = relation.columns[i]!;
    if (row[i] !== null || (column.nullable && !relation.primaryKey.includes(i))) continue;
    const visible = relation.columns.flatMap((c, j) => (c.hidden ? [] : [text(row[j]!, relation, j, runtime)]));
    throw new SqlError(SqlState.notNullViolation, `null value in column "${column.name}" of relation "${relation.name}" violates not-null constraint`, {
      detail: `Failing row contains (${visible.join(', ')}).`,
    });
  }
}

export function primaryKeyOf(relation: RelationDef, row: Row): Value[] {
  return relation.primaryKey.map((i) => row[i]!);
}

export function duplicateKeyError(relation: RelationDef, row: Row, runtime: Runtime): SqlError {
  const names = relation.primaryKey.map((i) => relation.columns[i]!.name).join(', ');
  const values = relation.primaryKey.map((i) => text(row[i]!, relation, i, runtime)).join(', ');
  return new SqlError(SqlState.uniqueViolation, `duplicate key value violates unique constraint "${relation.name}_pkey"`, {
    detail: `Key (${names})=(${values}) already exists.`,
  });
}
