// A read-only engine (a cluster's standby serving the checkpoint it followed, executor/cluster/):
// which statements write, and the error that refuses them. PostgreSQL's hot standby refuses the
// same statements with 25006 "cannot execute X in a read-only transaction"; the hint names where
// writes go (the leader).

import type { Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { nodeKind, statementWords, type OxbowPrepared } from './statement-kinds.js';

/** An engine that only reads: the state of one committed epoch, with no writers running. */
export interface ReadOnlyMode {
  /** The committed epoch every session reads (the followed checkpoint's). */
  readonly epoch: Epoch;
  /** Where writes and DDL go instead (the leader's address), for the error's hint; undefined when not known. */
  readonly writesGoTo: () => string | undefined;
}

export function readOnlyError(mode: ReadOnlyMode, command: string): SqlError {
  const leader = mode.writesGoTo();
  return new SqlError(SqlState.readOnlySqlTransaction, `cannot execute ${command} in a read-only transaction`, {
    hint:
      `this node is a standby serving checkpoint ${mode.epoch}; ` +
      (leader === undefined ? 'writes and DDL go to the leader (its address is not known yet)' : `writes and DDL go to the leader at ${leader}`),
  });
}

const dmlCommands: Readonly<Record<string, string>> = { InsertStmt: 'INSERT', UpdateStmt: 'UPDATE', DeleteStmt: 'DELETE', MergeStmt: 'MERGE' };

/** The command a statement would write with (PostgreSQL's name for it), or undefined when it only reads. */
export function writingCommand(statement: OxbowPrepared): string | undefined {
  const kind = nodeKind(statement.parsed);
  const body = (statement.parsed.node as Record<string, Record<string, unknown>>)[kind] ?? {};
  switch (statement.utility.kind) {
    case 'planned': {
      const dml = dmlCommands[kind];
      if (dml !== undefined) return dml;
      if (kind === 'SelectStmt') {
        if (body.intoClause !== undefined) return 'SELECT INTO';
        return modifyingCte(body);
      }
      return undefined;
    }
    case 'ddl':
      // CREATE MATERIALIZED VIEW parses as CreateTableAsStmt too.
      return kind === 'CreateTableAsStmt' && body.objtype !== 'OBJECT_MATVIEW' ? 'CREATE TABLE AS' : statementWords(statement.parsed.text);
    case 'copy':
      return body.is_from === true ? 'COPY FROM' : undefined;
    case 'subscribe':
      return 'SUBSCRIBE';
    case 'cursor':
      return kind === 'OxbowDeclareSubscribe' || kind === 'OxbowDeclareSubscriptionCursor' ? 'SUBSCRIBE' : undefined;
    case 'refresh':
      return 'REFRESH MATERIALIZED VIEW';
    case 'truncate':
      return 'TRUNCATE TABLE';
    default:
      return undefined;
  }
}

/** `WITH x AS (INSERT ...) SELECT ...`: the first data-modifying CTE's command. */
function modifyingCte(select: Record<string, unknown>): string | undefined {
  const ctes = ((select.withClause as { ctes?: unknown[] } | undefined)?.ctes ?? []) as { CommonTableExpr?: { ctequery?: Record<string, unknown> } }[];
  for (const cte of ctes) {
    const query = cte.CommonTableExpr?.ctequery ?? {};
    const inner = Object.keys(query)[0] ?? '';
    if (dmlCommands[inner] !== undefined) return dmlCommands[inner];
  }
  return undefined;
}
