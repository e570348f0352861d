// Statements that restore tools and dbt send about whole tables, which oxbow answers without a
// plan of their own: TRUNCATE (a DELETE of every row of each table), REFRESH MATERIALIZED VIEW (a
// maintained view is always fresh: a NOTICE) and LOCK TABLE ... IN ACCESS SHARE MODE (a block
// already reads one snapshot: the tables are checked and nothing more is held).

import type { Node, RangeVar } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { ParsedStatement } from '../../sql/parser/ast.js';
import type { Notice } from './engine.js';
import type { EngineCore } from './engine-core.js';

/** What these statements are given of the session that runs them (session.ts). */
export interface TableStatementHost {
  readonly core: EngineCore;
  searchPath(): string[];
  /** 'none' outside a transaction block. */
  blockContext(): string;
  notice(notice: Notice): void;
  /** Runs one DELETE statement's text as the session runs DML. */
  runDelete(text: string, signal: AbortSignal): Promise<void>;
}

function relationName(relation: RangeVar): string {
  return relation.schemaname === undefined ? relation.relname! : `${relation.schemaname}.${relation.relname!}`;
}

function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * TRUNCATE [TABLE] t [, ...] (dbt empties a seed's table with it before loading it again): a
 * DELETE of every row of each table, so views and indexes follow as for any delete (outside a
 * transaction block each table's DELETE commits on its own). RESTART IDENTITY is 0A000.
 */
export async function truncateStatement(parsed: ParsedStatement, host: TableStatementHost, signal: AbortSignal): Promise<string> {
  const node = (parsed.node as { TruncateStmt: { relations?: Node[]; restart_seqs?: boolean } }).TruncateStmt;
  if (node.restart_seqs === true) throw new SqlError(SqlState.featureNotSupported, 'TRUNCATE ... RESTART IDENTITY is not supported');
  const catalog = host.core.catalog.snapshot;
  const deletes: string[] = [];
  for (const relationNode of node.relations ?? []) {
    const relation = (relationNode as { RangeVar: RangeVar }).RangeVar;
    const name = relationName(relation);
    const position = (relation.location ?? 0) + parsed.location + 1;
    const found = catalog.resolveRelation(relation.schemaname, relation.relname!, host.searchPath());
    if (found === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position });
    if (found.kind !== 'table') throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a table`, { position });
    deletes.push(`DELETE FROM ${quoteName(found.schema)}.${quoteName(found.name)}`);
  }
  for (const text of deletes) await host.runDelete(text, signal);
  return 'TRUNCATE TABLE';
}

/**
 * REFRESH MATERIALIZED VIEW [CONCURRENTLY] name (a restore of pg_dump's output sends it): an oxbow
 * materialized view is kept up to date by its dataflow, so this checks the view and notes that.
 * WITH NO DATA would empty it until the next refresh, which a maintained view cannot be: 0A000.
 */
export function refreshStatement(parsed: ParsedStatement, host: TableStatementHost): string {
  const node = (parsed.node as { RefreshMatViewStmt: { relation: RangeVar; skipData?: boolean } }).RefreshMatViewStmt;
  const relation = node.relation;
  const name = relationName(relation);
  const position = (relation.location ?? 0) + parsed.location + 1;
  const found = host.core.catalog.snapshot.resolveRelation(relation.schemaname, relation.relname!, host.searchPath());
  if (found === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position });
  if (found.kind !== 'materialized_view') throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a materialized view`, { position });
  if (node.skipData === true) {
    throw new SqlError(SqlState.featureNotSupported, 'REFRESH MATERIALIZED VIEW ... WITH NO DATA is not supported', { hint: 'An oxbow materialized view is always populated and up to date.' });
  }
  host.notice({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `materialized view "${found.name}" is always up to date; REFRESH does nothing` });
  return 'REFRESH MATERIALIZED VIEW';
}

/**
 * LOCK TABLE ... IN ACCESS SHARE MODE (pg_dump's, before it reads): a statement of a transaction
 * block that checks the tables exist and holds nothing more, as a block's reads already see one
 * snapshot. Stronger modes would promise to keep writers out, which oxbow does not: 0A000.
 */
export function lockStatement(parsed: ParsedStatement, host: TableStatementHost): string {
  const node = (parsed.node as { LockStmt: { relations?: Node[]; mode?: number } }).LockStmt;
  if (host.blockContext() === 'none') throw new SqlError(SqlState.noActiveSqlTransaction, 'LOCK TABLE can only be used in transaction blocks');
  const ACCESS_SHARE = 1;
  if ((node.mode ?? ACCESS_SHARE) !== ACCESS_SHARE) {
    throw new SqlError(SqlState.featureNotSupported, 'LOCK TABLE is supported IN ACCESS SHARE MODE only', { hint: 'A transaction block reads one snapshot; oxbow has no table locks that keep writers out.' });
  }
  const catalog = host.core.catalog.snapshot;
  for (const relationNode of node.relations ?? []) {
    const relation = (relationNode as { RangeVar: RangeVar }).RangeVar;
    if (catalog.resolveRelation(relation.schemaname, relation.relname!, host.searchPath()) === undefined) {
      throw new SqlError(SqlState.undefinedTable, `relation "${relationName(relation)}" does not exist`, { position: (relation.location ?? 0) + parsed.location + 1 });
    }
  }
  return 'LOCK TABLE';
}
