// A read-only engine (a cluster's standby serving the checkpoint it followed, executor/cluster/):
// which statements write, and what happens to them. With `--standby-writes refuse` they get 25006
// "cannot execute X in a read-only transaction", as PostgreSQL's hot standby answers, with a hint
// naming where writes go (the leader). With `--standby-writes forward` (the default) a session's
// first Query (or Parse) that writes or begins a read-write block goes to the leader instead, and
// from then on the whole session does (pgwire/forward.ts): it reads what it wrote.

import type { Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { nodeKind, statementWords, type OxbowPrepared } from './statement-kinds.js';
import type { WriteForwarding } from './engine.js';

/** An engine that only reads: the state of one committed epoch, with no writers running. */
export interface ReadOnlyMode {
  /** The committed epoch every session reads (the followed checkpoint's). */
  readonly epoch: Epoch;
  /** Where writes and DDL go instead (the leader's address), for the error's hint; undefined when not known. */
  readonly writesGoTo: () => string | undefined;
  /** Writes are forwarded to the leader (`--standby-writes forward`); absent: refused with 25006. */
  readonly forward?: Omit<WriteForwarding, 'sessionSettings'>;
}

/**
 * Whether a statement must run on the leader when writes are forwarded: it writes (the statements
 * refused with 25006 otherwise, nextval and setval included), or it begins a transaction block
 * that is not READ ONLY (the block may write; its reads then run on the leader too).
 */
export function mustRunOnLeader(statement: OxbowPrepared): boolean {
  if (writingCommand(statement) !== undefined) return true;
  const kind = nodeKind(statement.parsed);
  const body = (statement.parsed.node as Record<string, Record<string, unknown>>)[kind] ?? {};
  if (kind === 'TransactionStmt') return (body.kind === 'TRANS_STMT_BEGIN' || body.kind === 'TRANS_STMT_START') && !beginsReadOnly(body);
  // A sequence's nextval/setval write its state (sequence-runtime.ts refuses them at run time).
  return SEQUENCE_WRITE.test(JSON.stringify(statement.parsed.node));
}

const SEQUENCE_WRITE = /"funcname":\[(?:\{"String":\{"sval":"pg_catalog"\}\},)?\{"String":\{"sval":"(?:nextval|setval)"\}\}\]/;

function beginsReadOnly(transaction: Record<string, unknown>): boolean {
  const options = (transaction.options ?? []) as { DefElem?: { defname?: string; arg?: { A_Const?: { ival?: { ival?: number } } } } }[];
  for (const option of options) {
    if (option.DefElem?.defname === 'transaction_read_only') return (option.DefElem.arg?.A_Const?.ival?.ival ?? 0) === 1;
  }
  return false;
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
