// CHECK constraints, verified before a writing statement commits: every row the statement wrote to
// a table with checks is tested against each check (in name order, as PostgreSQL reports the
// first failing one), by a small query the planner binds once per check:
//   SELECT (<check>) FROM (VALUES ($1::type, ...)) AS table(columns...)
// A false result fails the statement with 23514; NULL passes, as in SQL. Verification runs
// inside the write lock, so the aborted epoch leaves nothing behind.

import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import * as functions from '../../sql/functions.js';
import type { DataType } from '../../sql/types.js';
import type { Row, Value } from '../../sql/value.js';
import type { StoreTableAccess } from '../batch/table-access.js';
import { formatTypeName } from '../catalog/type-names.js';
import { quoteIdentifier } from '../system/system-context.js';
import { verifyForeignKeys } from '../batch/foreign-keys.js';

export interface CheckRunner {
  /** Plans `sql` with these parameter types, then evaluates it for each parameter row. */
  evaluate(sql: string, parameterTypes: readonly DataType[], parameterRows: readonly Row[]): Promise<Value[]>;
}

function checkQuery(relation: RelationDef, checkSql: string): { sql: string; types: DataType[]; indexes: number[] } {
  const indexes: number[] = [];
  relation.columns.forEach((column, index) => {
    if (!column.hidden) indexes.push(index);
  });
  const types = indexes.map((index) => relation.columns[index]!.type);
  const values = indexes.map((index, position) => `$${position + 1}::${formatTypeName(relation.columns[index]!.type)}`).join(', ');
  const names = indexes.map((index) => quoteIdentifier(relation.columns[index]!.name)).join(', ');
  return { sql: `SELECT (${checkSql}) FROM (VALUES (${values})) AS ${quoteIdentifier(relation.name)}(${names})`, types, indexes };
}

function failingRow(relation: RelationDef, row: Row): string {
  const parts: string[] = [];
  relation.columns.forEach((column, index) => {
    if (column.hidden) return;
    const value = row[index] ?? null;
    parts.push(value === null ? 'null' : functions.formatValue(value, column.type));
  });
  return parts.join(', ');
}

/** `contextOf(rowIndex)`: a CONTEXT line for the n-th written row (COPY names its input line). */
export async function verifyChecks(access: StoreTableAccess, runner: CheckRunner, contextOf?: (rowIndex: number) => string): Promise<void> {
  // FOREIGN KEY constraints first: an ON DELETE SET NULL cascade writes rows the checks then see.
  verifyForeignKeys(access);
  for (const { relation, rows } of access.checkedWrites.values()) {
    const checks = relation.checks ?? [];
    const verdicts: Value[][] = [];
    for (const check of checks) {
      const query = checkQuery(relation, check.sql);
      const parameterRows = rows.map((row) => query.indexes.map((index) => row[index] ?? null));
      verdicts.push(await runner.evaluate(query.sql, query.types, parameterRows));
    }
    for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
      for (let checkIndex = 0; checkIndex < checks.length; checkIndex++) {
        if (verdicts[checkIndex]![rowIndex] !== false) continue;
        throw new SqlError(SqlState.checkViolation, `new row for relation "${relation.name}" violates check constraint "${checks[checkIndex]!.name}"`, {
          detail: `Failing row contains (${failingRow(relation, rows[rowIndex]!)}).`,
          ...(contextOf === undefined ? {} : { context: contextOf(rowIndex) }),
        });
      }
    }
  }
  access.checkedWrites.clear();
}
