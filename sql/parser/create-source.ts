// `CREATE SOURCE [IF NOT EXISTS] name [( columns [, PRIMARY KEY (...)] [, WATERMARK FOR c AS e] )]
//  [INCLUDE ...] WITH (connector = '...', ...) [FORMAT x ENCODE y [( ... )]]`, RisingWave's syntax.
// The word SOURCE is rewritten to TABLE (same length, so the layout does not move) and the
// statement goes through the CREATE TABLE path, which takes the connector tail and the column-list
// extensions out; the resulting CreateStmt becomes an OxbowCreateSource node.

import type { ColumnDef, Constraint, CreateStmt } from '@pgsql/types';
import { SqlError, SqlState } from '../errors.js';
import type { Node, OxbowCreateSource } from './ast.js';
import { parsePostgresStatement, type StatementSlice } from './postgres-statement.js';
import { postgresPosition } from './postgres-grammar.js';

function primaryKeyOf(create: CreateStmt): string[] | undefined {
  for (const element of create.tableElts ?? []) {
    const constraint = (element as { Constraint?: Constraint }).Constraint;
    if (constraint?.contype === 'CONSTR_PRIMARY') {
      return (constraint.keys ?? []).map((key) => (key as { String: { sval: string } }).String.sval);
    }
    const column = (element as { ColumnDef?: ColumnDef }).ColumnDef;
    for (const columnConstraint of column?.constraints ?? []) {
      if ((columnConstraint as { Constraint?: Constraint }).Constraint?.contype === 'CONSTR_PRIMARY') return [column!.colname!];
    }
  }
  return undefined;
}

export function parseCreateSource(slice: StatementSlice, sourceWordIndex: number): { OxbowCreateSource: OxbowCreateSource } {
  const word = slice.tokens[sourceWordIndex]!;
  const { node, createTable } = parsePostgresStatement(slice, {
    prepare: (rewrite) => rewrite.replace(word.start, word.end, 'TABLE '),
    forceConnector: true,
  });
  const create = (node as { CreateStmt?: CreateStmt }).CreateStmt!;
  if (createTable?.connector === undefined) {
    throw new SqlError(SqlState.syntaxError, "CREATE SOURCE needs WITH (connector = '...')", {
      position: postgresPosition(slice.source, slice.tokens[slice.first]!.start),
    });
  }
  const columns: ColumnDef[] = [];
  for (const element of create.tableElts ?? []) {
    const column = (element as { ColumnDef?: ColumnDef }).ColumnDef;
    if (column !== undefined) columns.push(column);
  }
  const source: {
    relation: OxbowCreateSource['relation'];
    ifNotExists: boolean;
    columns: ColumnDef[];
    primaryKey?: string[];
    connector: OxbowCreateSource['connector'];
    watermark?: { column: string; expr: Node };
  } = {
    relation: create.relation!,
    ifNotExists: create.if_not_exists === true,
    columns,
    connector: createTable.connector,
  };
  const primaryKey = primaryKeyOf(create);
  if (primaryKey !== undefined) source.primaryKey = primaryKey;
  if (createTable.columns?.watermark !== undefined) source.watermark = createTable.columns.watermark;
  return { OxbowCreateSource: source };
}
