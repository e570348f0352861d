// A session's transaction status and blocks: BEGIN / COMMIT / ROLLBACK, an explicit block's undo
// log, the implicit block of a multi-statement Query message (beginMessage .. endMessage) and of a
// pipeline up to its Sync (beginPipeline .. endPipeline), where a statement stands for
// PreventInTransactionBlock (`blockContext`), and the rollback of what a block wrote (its
// compensating epoch, with a WARNING for what it cannot undo: DDL, rows past the log's bound, rows
// another session changed since). Every statement still commits at its own epoch
// (implicit-transaction.ts says what a block's rollback can undo).

import { SqlState, toSqlError } from '../../sql/errors.js';
import type { StoreTableAccess } from '../batch/table-access.js';
import type { Notice, TransactionStatus } from './engine.js';
import type { EngineCore } from './engine-core.js';
import { UndoLog, undoLimits } from './implicit-transaction.js';
import type { SavepointHost } from './savepoints.js';
import type { SessionSettings } from './settings.js';
import type { SqlCursors } from './cursors.js';
import type { Utility } from './statement-kinds.js';

/** What the session hands its transaction blocks. */
export interface TransactionBlocksHost {
  readonly core: EngineCore;
  readonly settings: SessionSettings;
  readonly cursors: SqlCursors;
  /** The session's table access (recording into the open block's undo log). */
  tableAccess(): StoreTableAccess;
  notice(notice: Notice): void;
}

export class TransactionBlocks {
  private statusNow: TransactionStatus = 'idle';
  /** The rows an explicit block (BEGIN ... COMMIT / ROLLBACK) wrote, for its ROLLBACK (implicit-transaction.ts). */
  private explicitBlock: UndoLog | undefined;
  /** DDL statements of the open block, implicit or explicit: a rollback cannot undo them. */
  private ddlInBlock = 0;
  /** A multi-statement Query message is running (beginMessage .. endMessage): its statements outside a block share an implicit one. */
  private inMultiStatementMessage = false;
  /** The open implicit transaction block of such a message: the rows it wrote (implicit-transaction.ts). */
  private implicitBlock: UndoLog | undefined;
  /**
   * Extended-protocol Executes are running before a Sync (beginPipeline .. endPipeline): their
   * statements outside a block share an implicit one, as PostgreSQL's extended protocol runs
   * everything up to a Sync in one transaction.
   */
  private inPipeline = false;
  /** What opened the implicit block: a multi-statement Query (a transaction block to PostgreSQL) or a pipeline (not one). */
  private implicitKind: 'message' | 'pipeline' = 'message';
  /** The running statement follows another one in its pipeline's implicit block (PostgreSQL's XACT_FLAGS_PIPELINING). */
  private pipelinedStatement = false;

  constructor(private readonly host: TransactionBlocksHost) {}

  get status(): TransactionStatus {
    return this.statusNow;
  }

  /**
   * A statement starts: a statement of a multi-statement Query (or of a pipeline) outside a block
   * opens (or joins) the implicit block, which endMessage() (endPipeline() at Sync) commits or rolls
   * back. True when the statement is its own transaction for settings (outside any block; the
   * caller ends it with `settings.endTransaction`).
   */
  beginStatement(kind: Utility['kind']): boolean {
    this.pipelinedStatement = this.inPipeline && this.statusNow === 'idle' && this.implicitBlock !== undefined && this.implicitKind === 'pipeline';
    if ((this.inMultiStatementMessage || this.inPipeline) && this.statusNow === 'idle' && this.implicitBlock === undefined) {
      this.implicitBlock = new UndoLog();
      this.implicitKind = this.inMultiStatementMessage ? 'message' : 'pipeline';
      this.host.settings.beginTransaction();
    }
    this.openBlock()?.discardPending();
    // Outside a block each statement is its own transaction for settings too: set_config(..., true)
    // lasts until it ends, and a failed statement's set_config is undone (PostgreSQL's implicit one).
    const ownTransaction = this.statusNow === 'idle' && kind !== 'transaction' && this.implicitBlock === undefined;
    if (ownTransaction) this.host.settings.beginTransaction();
    return ownTransaction;
  }

  /** A DDL statement succeeded: inside a block, a rollback will warn that it cannot undo it. */
  ddlRan(): void {
    if (this.openBlock() !== undefined) this.ddlInBlock++;
  }

  /** A statement failed: an explicit block is failed until its end. */
  statementFailed(): void {
    if (this.statusNow === 'inTransaction') this.statusNow = 'failed';
  }

  /** In a block of any kind (SUBSCRIBE is 25001 there). */
  inAnyBlock(): boolean {
    return this.statusNow !== 'idle' || this.implicitBlock !== undefined;
  }

  /** In a pipeline's implicit transaction, which PostgreSQL does not count as a transaction block. */
  inPipelineBlock(): boolean {
    return this.statusNow === 'idle' && this.implicitBlock !== undefined && this.implicitKind === 'pipeline';
  }

  async transaction(statement: 'begin' | 'start' | 'commit' | 'rollback'): Promise<string> {
    const { settings } = this.host;
    switch (statement) {
      case 'begin':
      case 'start':
        if (this.statusNow !== 'idle') {
          this.host.notice({ severity: 'WARNING', code: SqlState.activeSqlTransaction, message: 'there is already a transaction in progress' });
        } else if (this.implicitBlock !== undefined) {
          // BEGIN inside a message's implicit block makes it a regular block, the statements before
          // it included (PostgreSQL's rule): its settings transaction and its rows go on.
          this.statusNow = 'inTransaction';
          this.explicitBlock = this.implicitBlock;
          this.implicitBlock = undefined;
        } else {
          this.statusNow = 'inTransaction';
          this.explicitBlock = new UndoLog();
          this.ddlInBlock = 0;
          settings.beginTransaction();
        }
        return statement === 'begin' ? 'BEGIN' : 'START TRANSACTION';
      case 'commit': {
        const wasFailed = this.statusNow === 'failed';
        if (this.statusNow === 'idle') {
          this.host.notice({ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'there is no transaction in progress' });
          // In a message's implicit block, COMMIT closes it (later statements open a new one).
          await this.endImplicitBlock(true);
        } else {
          // A failed block's COMMIT is a ROLLBACK: its settings changes and rows are undone too.
          settings.endTransaction(!wasFailed);
          await this.endExplicitBlock(!wasFailed);
        }
        this.statusNow = 'idle';
        return wasFailed ? 'ROLLBACK' : 'COMMIT';
      }
      case 'rollback':
        if (this.statusNow === 'idle') {
          this.host.notice({ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'there is no transaction in progress' });
          // In a message's implicit block, ROLLBACK rolls it back (settings and rows).
          await this.endImplicitBlock(false);
        } else {
          // The block's settings and rows are undone.
          settings.endTransaction(false);
          await this.endExplicitBlock(false);
        }
        this.statusNow = 'idle';
        return 'ROLLBACK';
    }
  }

  /** What SAVEPOINT / RELEASE / ROLLBACK TO work on (savepoints.ts). */
  savepointHost(): SavepointHost {
    const host = this.host;
    return {
      status: this.statusNow,
      block: this.explicitBlock,
      settings: host.settings,
      core: host.core,
      tableAccess: () => host.tableAccess(),
      ddlInBlock: this.ddlInBlock,
      cursorNames: () => host.cursors.names(),
      closeCursorsExcept: (names) => host.cursors.closeExcept(names),
      resume: () => {
        this.statusNow = 'inTransaction';
      },
      notice: (notice) => host.notice(notice),
    };
  }

  /** The undo log of the open block, implicit or explicit. */
  openBlock(): UndoLog | undefined {
    return this.implicitBlock ?? this.explicitBlock;
  }

  /** A DML or COPY statement committed: inside a block, its rows join the block's undo log. */
  dataWritten(): void {
    this.openBlock()?.publish();
  }

  /** Ends the explicit block: COMMIT forgets its undo log, ROLLBACK writes its rows back. */
  private async endExplicitBlock(commit: boolean): Promise<void> {
    const block = this.explicitBlock;
    this.explicitBlock = undefined;
    if (block === undefined) return;
    block.discardPending();
    this.host.cursors.transactionEnded(commit);
    if (!commit) await this.rollBackRows(block, 'transaction block');
    this.ddlInBlock = 0;
  }

  /**
   * A multi-statement Query message begins (pgwire's simple-query loop): its statements outside an
   * explicit block run in one implicit block, committed or rolled back by endMessage().
   */
  beginMessage(statementCount: number): void {
    this.inMultiStatementMessage = statementCount > 1;
  }

  /**
   * The message ended (`failed`: a statement failed): its implicit block commits or rolls back. A
   * pipeline's open implicit block ends with it too (PostgreSQL commits at the end of a Query).
   */
  endMessage(failed: boolean): Promise<void> {
    this.inMultiStatementMessage = false;
    this.inPipeline = false;
    return this.endImplicitBlock(!failed);
  }

  /** An Execute that may not be alone before its Sync: the Executes until endPipeline() share an implicit block. */
  beginPipeline(): void {
    this.inPipeline = true;
  }

  /** Sync (`failed`: a message since the last Sync failed): the pipeline's implicit block commits or rolls back. */
  endPipeline(failed: boolean): Promise<void> {
    this.inPipeline = false;
    return this.endImplicitBlock(!failed);
  }

  /**
   * Where the running statement stands for PostgreSQL's PreventInTransactionBlock: in a block
   * (explicit, or a multi-statement Query's implicit one), after another statement of its
   * pipeline's implicit transaction, or neither.
   */
  blockContext(): 'block' | 'pipeline' | 'none' {
    if (this.statusNow !== 'idle') return 'block';
    if (this.implicitBlock === undefined) return 'none';
    if (this.implicitKind === 'message') return 'block';
    return this.pipelinedStatement ? 'pipeline' : 'none';
  }

  /** Ends the open implicit block, if any: a commit keeps its SETs; a rollback undoes them and its rows. */
  private async endImplicitBlock(commit: boolean): Promise<void> {
    const block = this.implicitBlock;
    if (block === undefined) return;
    this.implicitBlock = undefined;
    block.discardPending();
    this.host.settings.endTransaction(commit);
    this.host.cursors.transactionEnded(commit);
    if (!commit) await this.rollBackRows(block, 'query');
    this.ddlInBlock = 0;
  }

  /**
   * The session closed (its running statement and Query message ended): an open block (explicit,
   * or a pipeline's implicit one) is rolled back exactly as ROLLBACK would.
   */
  async rollBackOnClose(): Promise<void> {
    const blocks = [this.implicitBlock, this.explicitBlock];
    this.implicitBlock = this.explicitBlock = undefined;
    this.inPipeline = false;
    if (this.statusNow !== 'idle' || blocks[0] !== undefined) this.host.settings.endTransaction(false);
    this.statusNow = 'idle';
    for (const block of blocks) {
      if (block === undefined) continue;
      block.discardPending();
      await this.rollBackRows(block, block === blocks[0] ? 'query' : 'transaction block');
    }
  }

  /**
   * A rolled-back block's rows written back (its compensating epoch), with a WARNING for what it
   * cannot undo: rows past the log's bound, rows another session changed since, DDL.
   */
  private async rollBackRows(block: UndoLog, scope: 'query' | 'transaction block'): Promise<void> {
    const warn = (message: string, detail?: string) => this.host.notice({ severity: 'WARNING', code: SqlState.warning, message, ...(detail === undefined ? {} : { detail }) });
    const statements = (count: number) => `${count} statement${count === 1 ? '' : 's'}`;
    if (this.ddlInBlock > 0) warn(`rollback cannot undo ${statements(this.ddlInBlock)} of DDL in this ${scope}`, 'oxbow commits DDL at its own epoch; the rows this ' + scope + ' wrote are rolled back.');
    if (block.overflowed) {
      warn(`rollback cannot undo the rows this ${scope} wrote: more than ${undoLimits.rows} rows`, `${statements(block.statementsWritten)} of the ${scope} committed their rows at their own epochs.`);
      return;
    }
    try {
      const { skipped } = await block.rollBack(this.host.core, () => this.host.tableAccess());
      if (skipped > 0) {
        warn(`rollback left ${skipped} row${skipped === 1 ? '' : 's'} as ${skipped === 1 ? 'it was' : 'they were'} changed by another session or dropped since this ${scope} wrote ${skipped === 1 ? 'it' : 'them'}`);
      }
    } catch (error) {
      warn(`could not roll back the rows this ${scope} wrote: ${toSqlError(error).message}`);
    }
  }
}
