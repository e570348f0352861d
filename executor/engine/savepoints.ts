// SAVEPOINT, RELEASE [SAVEPOINT] and ROLLBACK TO [SAVEPOINT] inside an explicit transaction block.
//
// A savepoint is a mark in the block's undo log (implicit-transaction.ts): the writes after it go
// to a layer of their own, ROLLBACK TO writes that layer back in one compensating epoch (the same
// mechanism as a block's ROLLBACK: per key the first before-image, restored where the row still
// holds the last after-image), RELEASE merges it into the layer below. The session's settings go
// back to their values at the mark (SessionSettings.savepointMark), SQL cursors declared since the
// mark are closed, and a failed block is usable again (PostgreSQL's rule; psycopg's transaction()
// relies on it). DDL since the mark is not undone (the catalog has no undo): a WARNING says so.
//
// Outside a block (an implicit block included, as PostgreSQL says) each is 25P01; an unknown name
// is 3B001; two-phase commit (PREPARE TRANSACTION ...) stays 0A000 (statement-kinds.ts's classify).

import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import type { Notice, TransactionStatus } from './engine.js';
import type { EngineCore } from './engine-core.js';
import type { UndoLog } from './implicit-transaction.js';
import type { SessionSettings, SettingsMark } from './settings.js';
import type { StoreTableAccess } from '../batch/table-access.js';

export type SavepointAction = 'savepoint' | 'release' | 'rollbackTo';

/** What the session hands a savepoint statement. */
export interface SavepointHost {
  readonly status: TransactionStatus;
  /** The explicit block's undo log (undefined outside one). */
  readonly block: UndoLog | undefined;
  readonly settings: SessionSettings;
  readonly core: EngineCore;
  tableAccess(): StoreTableAccess;
  /** DDL statements run in the block so far. */
  readonly ddlInBlock: number;
  /** The SQL cursors open now, and closing those not in a set (cursors.ts). */
  cursorNames(): ReadonlySet<string>;
  closeCursorsExcept(names: ReadonlySet<string>): void;
  /** ROLLBACK TO succeeded: the block is in progress again (it may have failed). */
  resume(): void;
  notice(notice: Notice): void;
}

interface MarkState {
  readonly settings: SettingsMark;
  readonly ddl: number;
  readonly cursors: ReadonlySet<string>;
}

const statementNames: Record<SavepointAction, string> = {
  savepoint: 'SAVEPOINT',
  release: 'RELEASE SAVEPOINT',
  rollbackTo: 'ROLLBACK TO SAVEPOINT',
};

/** Runs the statement; returns its command tag (`SAVEPOINT`, `RELEASE`, `ROLLBACK`). */
export async function savepointStatement(action: SavepointAction, name: string, host: SavepointHost): Promise<string> {
  const block = host.block;
  if (host.status === 'idle' || block === undefined) {
    throw new SqlError(SqlState.noActiveSqlTransaction, `${statementNames[action]} can only be used in transaction blocks`);
  }
  if (action === 'savepoint') {
    const state: MarkState = { settings: host.settings.savepointMark(), ddl: host.ddlInBlock, cursors: host.cursorNames() };
    block.markSavepoint(name, state);
    return 'SAVEPOINT';
  }
  const index = block.findSavepoint(name);
  if (index < 0) throw new SqlError(SqlState.invalidSavepointSpecification, `savepoint "${name}" does not exist`);
  if (action === 'release') {
    block.releaseSavepoint(index);
    return 'RELEASE';
  }
  const warn = (message: string) => host.notice({ severity: 'WARNING', code: SqlState.warning, message });
  block.discardPending();
  let state: MarkState;
  try {
    const outcome = await block.rollBackToSavepoint(index, host.core, () => host.tableAccess());
    state = outcome.state as MarkState;
    if (block.overflowed) warn(`rollback to savepoint "${name}" cannot undo the rows written since: the transaction block wrote more rows than its undo log holds`);
    if (outcome.skipped > 0) warn(`rollback to savepoint left ${outcome.skipped} row${outcome.skipped === 1 ? '' : 's'} as changed by another session or dropped since`);
  } catch (error) {
    throw new SqlError(SqlState.internalError, `could not roll back to savepoint "${name}": ${toSqlError(error).message}`);
  }
  host.settings.rollBackToMark(state.settings);
  host.closeCursorsExcept(state.cursors);
  const ddl = host.ddlInBlock - state.ddl;
  if (ddl > 0) warn(`rollback to savepoint cannot undo ${ddl} statement${ddl === 1 ? '' : 's'} of DDL since the savepoint`);
  host.resume();
  return 'ROLLBACK';
}
