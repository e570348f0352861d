// The extended query protocol: Parse, Bind, Describe, Execute, Close, Sync, Flush over named and
// unnamed prepared statements and portals. The connection calls these one message at a time and
// applies the error rule (after an error, every message up to Sync is discarded); Sync writes
// ReadyForQuery and, outside a transaction block, drops the portals (their transaction ended).
//
// Everything up to a Sync is one transaction, as in PostgreSQL: several Executes before a Sync
// (pipelining, JDBC batches) run as one implicit transaction (the session's beginPipeline /
// endPipeline), so an error undoes the earlier Executes since the last Sync. An Execute whose
// Sync has already arrived with no other Execute before it (what node-postgres sends: Parse, Bind,
// Describe, Execute, Sync in one write) is alone in its transaction and opens none: it logs no
// undo rows. Bind and Describe re-plan a prepared statement whose catalog or search path changed
// (0A000 when its result columns would change, as PostgreSQL's plan cache says).

import type { ColumnDescription, PreparedStatement, Session } from '../executor/engine/engine.js';
import { SqlError, SqlState, type SqlStateCode } from '../sql/errors.js';
import { typeFromOid, type DataType } from '../sql/types.js';
import type { Value } from '../sql/value.js';
import { writeBindComplete, writeCloseComplete, writeCommandComplete, writeNoData, writeParseComplete } from './backend/completions.js';
import { writeParameterDescription } from './backend/parameter-description.js';
import { writeRowDescription } from './backend/row-description.js';
import { readBind } from './frontend/bind.js';
import { readClose, readDescribe } from './frontend/describe.js';
import { readExecute } from './frontend/execute.js';
import { readParse } from './frontend/parse.js';
import { sendResult, sendRows, suspend, type RowsResult } from './results.js';
import { columnEncoders, decodeParameters, resultFormats, type ColumnEncoder } from './value-codec.js';
import type { Wire } from './wire.js';

/** Named statements per session: a limit, so a client leaking statements gets an error, not OOM. */
const MAX_PREPARED_STATEMENTS = 10_000;
const MAX_PORTALS = 10_000;
/** duplicate_cursor: not in sql/errors.ts's table, PostgreSQL's code for an existing portal name. */
const DUPLICATE_CURSOR = '42P03' as SqlStateCode;

interface Portal {
  readonly statement: PreparedStatement;
  readonly parameters: Value[];
  readonly formats: readonly number[];
  /** Set by the first Execute of a row-returning statement; kept while suspended. */
  rows: { result: RowsResult; encoders: ColumnEncoder[] } | undefined;
  /** Set once a row-returning portal ran to completion: later Executes return no rows ("SELECT 0"). */
  finishedTag: string | undefined;
  /** Set once a command (or COPY) portal ran: running it again is an error. */
  ranCommand: boolean;
}

export class ExtendedQuery {
  private readonly statements = new Map<string, PreparedStatement>();
  /** The Parse messages of the named statements, for a session that moves to the leader (forward.ts prepares them there too). */
  private readonly namedParses = new Map<string, Buffer>();
  private readonly portals = new Map<string, Portal>();
  /** An Execute since the last Sync began a pipeline's implicit transaction (the session's beginPipeline). */
  private pipelineOpen = false;

  constructor(private readonly wire: Wire) {}

  private get session(): Session {
    return this.wire.session;
  }

  parse(payload: Buffer): void {
    const message = readParse(payload);
    if (message.statementName !== '' && this.statements.has(message.statementName)) {
      throw new SqlError(SqlState.duplicatePreparedStatement, `prepared statement "${message.statementName}" already exists`);
    }
    if (this.statements.size >= MAX_PREPARED_STATEMENTS) {
      throw new SqlError(SqlState.programLimitExceeded, `too many prepared statements (the limit is ${MAX_PREPARED_STATEMENTS})`, {
        hint: 'Close prepared statements that are no longer needed.',
      });
    }
    const declared: (DataType | undefined)[] = message.parameterTypeOids.map((oid) => {
      if (oid === 0) return undefined;
      const type = typeFromOid(oid);
      if (type === undefined) throw new SqlError(SqlState.undefinedObject, `type with OID ${oid} does not exist`);
      return type;
    });
    const statement = this.session.prepare(message.sql, declared);
    this.statements.set(message.statementName, statement);
    if (message.statementName !== '') this.namedParses.set(message.statementName, Buffer.from(payload as unknown as Uint8Array));
    writeParseComplete(this.wire.writer);
  }

  bind(payload: Buffer): void {
    const message = readBind(payload);
    const statement = this.statement(message.statementName);
    const expected = statement.parameterTypes.length;
    if (message.parameters.length !== expected) {
      throw new SqlError(
        SqlState.protocolViolation,
        `bind message supplies ${message.parameters.length} parameters, but prepared statement "${message.statementName}" requires ${expected}`,
      );
    }
    if (message.portalName !== '' && this.portals.has(message.portalName)) {
      throw new SqlError(DUPLICATE_CURSOR, `cursor "${message.portalName}" already exists`);
    }
    if (this.portals.size >= MAX_PORTALS) {
      throw new SqlError(SqlState.programLimitExceeded, `too many open portals (the limit is ${MAX_PORTALS})`);
    }
    this.session.revalidate?.(statement);
    const formats = resultFormats(message.resultFormats, statement.columns?.length ?? message.resultFormats.length);
    const parameters = decodeParameters(message.parameters, message.parameterFormats, statement.parameterTypes, this.wire.evalContext());
    this.closePortal(message.portalName);
    this.portals.set(message.portalName, { statement, parameters, formats, rows: undefined, finishedTag: undefined, ranCommand: false });
    writeBindComplete(this.wire.writer);
  }

  describe(payload: Buffer): void {
    const message = readDescribe(payload);
    const writer = this.wire.writer;
    if (message.target === 'statement') {
      const statement = this.statement(message.name);
      writeParameterDescription(writer, statement.parameterTypes);
      this.session.revalidate?.(statement);
      this.writeColumns(statement.columns, null);
      return;
    }
    const cursor = this.portals.has(message.name) ? undefined : this.session.describeCursor?.(message.name);
    if (cursor !== undefined) {
      // A SQL cursor (DECLARE) is a portal too: its columns, in its format.
      this.writeColumns(cursor.columns, [cursor.binary ? 1 : 0]);
      return;
    }
    const portal = this.portal(message.name);
    this.writeColumns(portal.rows?.result.columns ?? portal.statement.columns, portal.formats);
  }

  async execute(payload: Buffer): Promise<void> {
    const message = readExecute(payload);
    const portal = this.portal(message.portalName);
    const writer = this.wire.writer;
    if (portal.finishedTag !== undefined) {
      writeCommandComplete(writer, portal.finishedTag);
      return;
    }
    if (portal.ranCommand) {
      // PostgreSQL runs a command portal once; another Execute is an error.
      throw new SqlError(SqlState.objectNotInPrerequisiteState, `portal "${message.portalName}" cannot be run`);
    }
    if (portal.rows === undefined) {
      if (!this.pipelineOpen && this.session.beginPipeline !== undefined && !this.wire.syncBeforeNextExecute()) {
        this.session.beginPipeline();
        this.pipelineOpen = true;
      }
      const result = await this.session.execute(portal.statement, { parameters: portal.parameters });
      if (result.kind !== 'rows') {
        // Commands, COPY and empty statements run to completion on their first Execute.
        await sendResult(this.wire, result, (columns) => columnEncoders(columns, portal.formats, this.wire.evalContext()));
        portal.ranCommand = true;
        return;
      }
      portal.rows = { result, encoders: columnEncoders(result.columns, resultFormats(portal.formats, result.columns.length), this.wire.evalContext()) };
    }
    const { result, encoders } = portal.rows;
    let outcome;
    try {
      outcome = await sendRows(this.wire, result.cursor, encoders, message.maxRows);
    } catch (error) {
      this.closePortal(message.portalName);
      throw error;
    }
    if (!outcome.ended) {
      suspend(this.wire);
      return;
    }
    const tag = result.commandTag(outcome.count);
    writeCommandComplete(writer, tag);
    result.cursor.close();
    portal.rows = undefined;
    // A finished SELECT portal executed again returns no more rows: "SELECT 0".
    portal.finishedTag = result.commandTag(0);
  }

  close(payload: Buffer): void {
    const message = readClose(payload);
    if (message.target === 'statement') {
      this.statements.delete(message.name);
      this.namedParses.delete(message.name);
    }
    else this.closePortal(message.name);
    writeCloseComplete(this.wire.writer);
  }

  /** Sync (`failed`: a message since the last Sync failed): ends the pipeline's transaction, then ReadyForQuery. */
  async sync(failed: boolean): Promise<void> {
    if (this.pipelineOpen) {
      this.pipelineOpen = false;
      await this.session.endPipeline?.(failed);
    }
    if (this.session.transactionStatus() === 'idle') this.closeAllPortals();
    this.wire.readyForQuery();
  }

  /**
   * The session moves to the leader (forward.ts): the pipeline so far (it only read) ends here,
   * its portals close; the Parse messages of its named statements, to prepare them there too.
   */
  async handOver(): Promise<Buffer[]> {
    if (this.pipelineOpen) {
      this.pipelineOpen = false;
      await this.session.endPipeline?.(false);
    }
    this.closeAllPortals();
    return [...this.namedParses.values()];
  }

  /** A simple Query ended the pipeline's transaction (the session's endMessage). */
  pipelineEnded(): void {
    this.pipelineOpen = false;
  }

  /** The simple Query protocol destroys the unnamed statement and portal (PostgreSQL does too). */
  forgetUnnamed(): void {
    this.statements.delete('');
    this.closePortal('');
  }

  closeAllPortals(): void {
    for (const name of [...this.portals.keys()]) this.closePortal(name);
  }

  private closePortal(name: string): void {
    const portal = this.portals.get(name);
    if (portal === undefined) return;
    this.portals.delete(name);
    portal.rows?.result.cursor.close();
  }

  private statement(name: string): PreparedStatement {
    const statement = this.statements.get(name);
    if (statement === undefined) {
      throw new SqlError(SqlState.invalidSqlStatementName, name === '' ? 'unnamed prepared statement does not exist' : `prepared statement "${name}" does not exist`);
    }
    return statement;
  }

  private portal(name: string): Portal {
    const portal = this.portals.get(name);
    if (portal === undefined) {
      throw new SqlError(SqlState.invalidCursorName, `portal "${name}" does not exist`);
    }
    return portal;
  }

  private writeColumns(columns: readonly ColumnDescription[] | null, formats: readonly number[] | null): void {
    if (columns === null) {
      writeNoData(this.wire.writer);
      return;
    }
    writeRowDescription(this.wire.writer, columns, formats === null ? [] : resultFormats(formats, columns.length));
  }
}
