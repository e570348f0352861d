// What a session knows about a statement before it runs it: its kind (a planned query or DML, a
// transaction statement, a setting, DDL, COPY, SHOW ...; `classify`), the prepared form it keeps
// (`OxbowPrepared`: the parse, the plan and what it was planned against), and the small pieces of
// its answer: rows as a cursor (`rowsResult`), result-column equality for re-plans, the
// statement_timeout timer.

import type { Node } from '@pgsql/types';
import type { ParsedStatement } from '../../sql/parser/ast.js';
import type { ShapeLiteral } from '../../sql/parser/insert-values-shape.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type, typeOid } from '../../sql/types.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { isDdl } from '../ddl/run-ddl.js';
import type { ColumnDescription, ExecuteResult, PreparedStatement, RowCursor } from './engine.js';
import type { CachedShape } from './insert-shape-cache.js';
import type { SavepointAction } from './savepoints.js';

export type Utility =
  | { readonly kind: 'planned' }
  | { readonly kind: 'transaction'; readonly statement: 'begin' | 'start' | 'commit' | 'rollback' }
  | { readonly kind: 'savepoint'; readonly action: SavepointAction; readonly name: string }
  | { readonly kind: 'sqlPrepared' }
  | { readonly kind: 'cursor' }
  | { readonly kind: 'setting' }
  | { readonly kind: 'ddl' }
  | { readonly kind: 'copy' }
  | { readonly kind: 'flush' }
  | { readonly kind: 'empty' }
  | { readonly kind: 'show' }
  | { readonly kind: 'explainView' }
  | { readonly kind: 'subscribe' }
  | { readonly kind: 'lock' }
  | { readonly kind: 'refresh' }
  | { readonly kind: 'truncate' }
  | { readonly kind: 'unsupported'; readonly message: string };

export interface OxbowPrepared extends PreparedStatement {
  readonly parsed: ParsedStatement;
  readonly utility: Utility;
  readonly declaredParameterTypes: readonly (DataType | undefined)[];
  /** The plan and the catalog and search path it was made against (re-planned when either changes). */
  plan?: { readonly planned: PlannedStatement; readonly catalog: CatalogSnapshot; readonly searchPath: string };
  /**
   * Prepared by Parse (extended protocol): its parameter types and result columns were sent to the
   * client and stay fixed; a re-plan that would change the columns is 0A000, as PostgreSQL's plan
   * cache refuses ("cached plan must not change result type").
   */
  readonly fixedResult?: true;
  /** The catalog, role and search path its privileges were last found sufficient under (privilege-check.ts). */
  privilegesChecked?: { readonly catalog: CatalogSnapshot; readonly roleId: number; readonly searchPath: string };
  /**
   * An INSERT ... VALUES prepared from its cached shape (insert-shape-cache.ts): `parsed` is the
   * parameterized statement, the parameters are these literals (not the execute options').
   */
  readonly shape?: { readonly cached: CachedShape; readonly literals: readonly ShapeLiteral[] };
}

export const QUERY_PLAN_COLUMNS: readonly ColumnDescription[] = [{ name: 'QUERY PLAN', type: type('text'), tableOid: 0, columnNumber: 0 }];

const plannedStatementKinds = new Set(['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt', 'ExplainStmt']);

export function nodeKind(statement: ParsedStatement): string {
  return Object.keys(statement.node)[0] ?? '';
}

export function classify(statement: ParsedStatement): Utility {
  const kind = nodeKind(statement);
  const body = (statement.node as Record<string, Record<string, unknown>>)[kind] ?? {};
  if (plannedStatementKinds.has(kind)) return { kind: 'planned' };
  switch (kind) {
    case 'TransactionStmt': {
      switch (body.kind) {
        case 'TRANS_STMT_BEGIN':
          return { kind: 'transaction', statement: 'begin' };
        case 'TRANS_STMT_START':
          return { kind: 'transaction', statement: 'start' };
        case 'TRANS_STMT_COMMIT':
          return { kind: 'transaction', statement: 'commit' };
        case 'TRANS_STMT_ROLLBACK':
          return { kind: 'transaction', statement: 'rollback' };
        case 'TRANS_STMT_SAVEPOINT':
          return { kind: 'savepoint', action: 'savepoint', name: String(body.savepoint_name) };
        case 'TRANS_STMT_RELEASE':
          return { kind: 'savepoint', action: 'release', name: String(body.savepoint_name) };
        case 'TRANS_STMT_ROLLBACK_TO':
          return { kind: 'savepoint', action: 'rollbackTo', name: String(body.savepoint_name) };
        default:
          return { kind: 'unsupported', message: 'two-phase commit (PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED) is not supported' };
      }
    }
    case 'PrepareStmt':
    case 'ExecuteStmt':
    case 'DeallocateStmt':
      return { kind: 'sqlPrepared' };
    case 'DeclareCursorStmt':
    case 'FetchStmt':
    case 'ClosePortalStmt':
    case 'OxbowDeclareSubscribe':
    case 'OxbowDeclareSubscriptionCursor':
      return { kind: 'cursor' };
    case 'VariableSetStmt':
    case 'VariableShowStmt':
    case 'DiscardStmt':
      return { kind: 'setting' };
    case 'CopyStmt':
      return { kind: 'copy' };
    case 'OxbowFlush':
      return { kind: 'flush' };
    case 'OxbowShowObjects':
    case 'OxbowShowCreate':
    case 'OxbowDescribe':
      return { kind: 'show' };
    case 'OxbowExplainAnalyzeView':
      return { kind: 'explainView' };
    case 'OxbowSubscribe':
      return { kind: 'subscribe' };
    case 'LockStmt':
      return { kind: 'lock' };
    case 'RefreshMatViewStmt':
      return { kind: 'refresh' };
    case 'TruncateStmt':
      return { kind: 'truncate' };
    default:
      if (isDdl(kind)) return { kind: 'ddl' };
      return { kind: 'unsupported', message: `${statementWords(statement.text)} is not supported` };
  }
}

/** The leading keywords of a statement (`CREATE SEQUENCE`, `VACUUM`) for "not supported" errors. */
export function statementWords(text: string): string {
  const words = text.trim().split(/\s+/, 4).map((word) => word.toUpperCase().replace(/[^A-Z_]/g, ''));
  const first = words[0] ?? '';
  if (['CREATE', 'DROP', 'ALTER', 'COMMENT'].includes(first)) {
    const second = words[1] ?? '';
    if (second === 'OR') return words.slice(0, 4).join(' ');
    if (['UNIQUE', 'TEMP', 'TEMPORARY', 'ON', 'MATERIALIZED'].includes(second)) return words.slice(0, 3).join(' ');
    return `${first} ${second}`.trim();
  }
  return first;
}

/** Statements a failed block runs: COMMIT, ROLLBACK, ROLLBACK TO SAVEPOINT. */
export function endsFailedBlock(utility: Utility): boolean {
  if (utility.kind === 'transaction') return utility.statement === 'commit' || utility.statement === 'rollback';
  return utility.kind === 'savepoint' && utility.action === 'rollbackTo';
}

/** Result columns of the same names, types and type modifiers (PostgreSQL's equalTupleDescs for a result). */
export function sameColumns(a: readonly ColumnDescription[] | null, b: readonly ColumnDescription[] | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) {
    const left = a[index]!;
    const right = b[index]!;
    if (left.name !== right.name || typeOid(left.type) !== typeOid(right.type) || left.type.typmod !== right.type.typmod) return false;
  }
  return true;
}

/** `CREATE INDEX CONCURRENTLY` / `DROP INDEX CONCURRENTLY`: statements PostgreSQL refuses inside a transaction block. */
export function concurrentIndexStatement(node: Node): string | undefined {
  const record = node as { IndexStmt?: { concurrent?: boolean }; DropStmt?: { concurrent?: boolean; removeType?: string } };
  if (record.IndexStmt?.concurrent === true) return 'CREATE INDEX CONCURRENTLY';
  if (record.DropStmt?.concurrent === true && record.DropStmt.removeType === 'OBJECT_INDEX') return 'DROP INDEX CONCURRENTLY';
  return undefined;
}

function timeoutError(): SqlError {
  return new SqlError(SqlState.queryCanceled, 'canceling statement due to statement timeout');
}

/**
 * statement_timeout: a timer aborts the statement when the event loop gets to it, and, because a
 * long synchronous stretch of the executor would hold the timer back, the signal's `aborted`
 * check (which the executor makes between batches) also compares the clock with the deadline.
 */
export function armTimeout(controller: AbortController, timeoutMs: number): NodeJS.Timeout {
  const deadline = Date.now() + timeoutMs;
  const signal = controller.signal;
  const inherited = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
  Object.defineProperty(signal, 'aborted', {
    configurable: true,
    get(): boolean {
      if (!inherited.call(signal) && Date.now() >= deadline) controller.abort(timeoutError());
      return inherited.call(signal) as boolean;
    },
  });
  return setTimeout(() => controller.abort(timeoutError()), timeoutMs);
}

export function rowsResult(columns: readonly ColumnDescription[], rows: Row[], commandTag: () => string): ExecuteResult {
  let position = 0;
  const cursor: RowCursor = {
    next(maxRows: number): Promise<Row[]> {
      const end = maxRows > 0 ? Math.min(rows.length, position + maxRows) : rows.length;
      const batch = position === 0 && end === rows.length ? rows : rows.slice(position, end);
      position = end;
      return Promise.resolve(batch);
    },
    close(): void {
      position = rows.length;
    },
  };
  return {
    kind: 'rows',
    columns,
    cursor,
    // A portal may stop early (Execute with a row limit, then Close): SELECT counts what was sent.
    commandTag: (rowCount: number) => {
      const tag = commandTag();
      return tag.startsWith('SELECT') ? `SELECT ${rowCount}` : tag;
    },
  };
}
