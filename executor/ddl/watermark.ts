// `WATERMARK FOR col AS expr` of CREATE TABLE / CREATE SOURCE (RisingWave's syntax; the parser puts
// it on the CreateStmt as `oxbowWatermark`): validated and stored on the relation as the column and
// the delay (`col - interval '5 seconds'`, or `col` for no delay). Views that EMIT ON WINDOW CLOSE
// follow the watermark (executor/stream/watermark-filter.ts): it is the largest `col - delay` seen,
// rows behind it are dropped, and a window is emitted once the watermark passes its end.

import type { CreateStmt, Node } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parseInterval } from '../../sql/interval.js';
import type { Watermark } from '../../sql/parser/ast.js';

/** PostgreSQL's interval field masks (`INTERVAL '5' SECOND`). */
const FIELD_UNITS: Readonly<Record<number, string>> = { 2: 'months', 4: 'years', 8: 'days', 1024: 'hours', 2048: 'minutes', 4096: 'seconds' };

function unsupported(): SqlError {
  return new SqlError(SqlState.featureNotSupported, "this WATERMARK expression is not supported", { hint: "Use WATERMARK FOR col AS col - INTERVAL '...' (or AS col)." });
}

function columnName(node: Node | undefined): string | undefined {
  const fields = (node as { ColumnRef?: { fields?: Node[] } } | undefined)?.ColumnRef?.fields;
  const last = fields?.[fields.length - 1] as { String?: { sval?: string } } | undefined;
  return last?.String?.sval;
}

function intervalText(node: Node | undefined): string | undefined {
  const cast = (node as { TypeCast?: { arg?: Node; typeName?: { names?: Node[]; typmods?: Node[] } } } | undefined)?.TypeCast;
  if (cast === undefined) return undefined;
  const typeName = (cast.typeName?.names ?? []).map((name) => (name as { String?: { sval?: string } }).String?.sval).pop();
  const text = (cast.arg as { A_Const?: { sval?: { sval?: string } } } | undefined)?.A_Const?.sval?.sval;
  if (typeName !== 'interval' || text === undefined) return undefined;
  const mask = (cast.typeName?.typmods?.[0] as { A_Const?: { ival?: { ival?: number } } } | undefined)?.A_Const?.ival?.ival;
  const unit = mask === undefined ? undefined : FIELD_UNITS[mask];
  return unit !== undefined && /^\s*[-+]?\d+(\.\d+)?\s*$/.test(text) ? `${text.trim()} ${unit}` : text;
}

/** The relation's watermark from the statement, or undefined without one. */
export function watermarkOf(statement: CreateStmt, columns: readonly ColumnDef[]): RelationDef['watermark'] {
  const spec = (statement as CreateStmt & { oxbowWatermark?: Watermark }).oxbowWatermark;
  if (spec === undefined) return undefined;
  const column = columns.findIndex((candidate) => candidate.name === spec.column && !candidate.hidden);
  if (column < 0) throw new SqlError(SqlState.undefinedColumn, `column "${spec.column}" named in WATERMARK FOR does not exist`);
  const type = columns[column]!.type.name;
  if (type !== 'timestamp' && type !== 'timestamptz') {
    throw new SqlError(SqlState.datatypeMismatch, `the WATERMARK column "${spec.column}" must be of type timestamp or timestamptz, not ${type}`);
  }
  const expr = spec.expr as Node & { A_Expr?: { kind?: string; name?: Node[]; lexpr?: Node; rexpr?: Node } };
  if (columnName(expr) === spec.column) return { column, delay: '0' };
  const operation = expr.A_Expr;
  const operator = (operation?.name?.[0] as { String?: { sval?: string } } | undefined)?.String?.sval;
  if (operation?.kind !== 'AEXPR_OP' || operator !== '-' || columnName(operation.lexpr) !== spec.column) throw unsupported();
  const delay = intervalText(operation.rexpr);
  if (delay === undefined) throw unsupported();
  parseInterval(delay);
  return { column, delay };
}
