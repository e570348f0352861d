// pg_catalog.pg_cursors and pg_catalog.pg_prepared_statements: the session's SQL cursors
// (DECLARE, engine/cursors.ts) and SQL-prepared statements (PREPARE,
// engine/prepared-statements-sql.ts), with PostgreSQL 15's columns. Only SQL-level ones are
// listed (from_sql true): the extended protocol's named statements are pgwire's.


import { typeOid, type DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';

export const PG_CURSORS_RELATION_ID = 13320;
export const PG_PREPARED_STATEMENTS_RELATION_ID = 13321;

/** What the session lists (SystemContext.sessionObjects). */
export interface SessionObjects {
  cursors(): readonly { readonly name: string; readonly statement: string; readonly hold: boolean; readonly binary: boolean; readonly createdMillis: number }[];
  preparedStatements(): readonly { readonly name: string; readonly statement: string; readonly parameterTypes: readonly DataType[]; readonly preparedMillis: number; readonly executions: number }[];
}

export const pgCursorsTable: SystemTable = {
  def: systemRelation(PG_CURSORS_RELATION_ID, 'pg_catalog', 'pg_cursors', ['name:text', 'statement:text', 'is_holdable:bool', 'is_binary:bool', 'is_scrollable:bool', 'creation_time:timestamptz']),
  rows: (context) => (context.sessionObjects?.cursors() ?? []).map((cursor): Row => [cursor.name, cursor.statement, cursor.hold, cursor.binary, false, cursor.createdMillis * 1000]),
};

export const pgPreparedStatementsTable: SystemTable = {
  def: systemRelation(PG_PREPARED_STATEMENTS_RELATION_ID, 'pg_catalog', 'pg_prepared_statements', [
    'name:text',
    'statement:text',
    'prepare_time:timestamptz',
    'parameter_types:regtype[]',
    'from_sql:bool',
    'generic_plans:int8',
    'custom_plans:int8',
  ]),
  rows: (context) =>
    (context.sessionObjects?.preparedStatements() ?? []).map((prepared): Row => [
      prepared.name,
      prepared.statement,
      prepared.preparedMillis * 1000,
      { kind: 'array', elements: prepared.parameterTypes.map((parameterType) => typeOid(parameterType)) },
      true,
      0n,
      // oxbow plans once per catalog version; PostgreSQL's first five executions are custom plans.
      BigInt(prepared.executions),
    ]),
};

