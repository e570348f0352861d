// One client connection's session: the Session facade of engine.ts. It parses, plans (through the
// planner for queries and DML, its own handlers for utility statements), executes, and owns the
// session's settings, transaction status, cancellation and statement_timeout.
//
// Statements are planned when they run, not when a multi-statement string is split (a later
// statement may read a table an earlier one creates); `prepare` (extended protocol) plans at once
// to describe its columns, and a statement is re-planned when the catalog changed since.
//
// Transactions, honestly: every statement commits on its own, at its own epoch. BEGIN / COMMIT /
// ROLLBACK report the status they imply (an error inside a block makes it 'failed' until ROLLBACK,
// as in PostgreSQL); a block logs the rows it writes (implicit-transaction.ts), and its ROLLBACK
// (or a failed block's COMMIT) writes them back in one compensating epoch. DDL is not undone (a
// WARNING says so), and other sessions can see a block's rows before its ROLLBACK.
// Settings are transactional as in PostgreSQL: a block's ROLLBACK undoes its SETs, SET LOCAL ends
// with the block, and outside a block each statement is its own transaction for them. A
// multi-statement Query message is one implicit block (beginMessage / endMessage): a failure
// undoes its settings and writes the rows it changed back (implicit-transaction.ts).

import { getEventListeners } from 'node:events';
import type { Node, RangeVar } from '@pgsql/types';
import type { OxbowDescribe, OxbowExplainAnalyzeView, OxbowShowCreate, OxbowShowObjects, ParsedStatement } from '../../sql/parser/ast.js';
import { parse } from '../../sql/parser/index.js';
import { insertValuesShape, type InsertValuesShape } from '../../sql/parser/insert-values-shape.js';
import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import type { EvalContext } from '../../sql/functions.js';
import { type } from '../../sql/types.js';
import type { DataType } from '../../sql/types.js';
import type { Row, Value } from '../../sql/value.js';
import { planStatement, type PlannedStatement, type PlannerContext } from '../../planner/index.js';
import { executePlanned } from '../batch/index.js';
import { objectName, quoteIdentifier } from '../catalog/object-names.js';
import { objectOid } from '../../planner/binder/context.js';
import type {
  ColumnDescription,
  ExecuteOptions,
  ExecuteResult,
  Notice,
  PreparedStatement,
  Session,
  SessionEvents,
  StartupParameters,
  TransactionStatus,
} from './engine.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { EngineCore } from './engine-core.js';
import { SessionSettings } from './settings.js';
import { expandViews } from '../catalog/view-expansion.js';
import { describeRelation, showCreate, showObjects, type ShowResult } from './show-objects.js';
import { StoreTableAccess, stateTableOf } from '../batch/table-access.js';
import { executeDdl } from '../ddl/ddl-statement.js';
import { prepareCopy, type CopyStatementPlan } from './copy.js';
import { prepareSubscribe, type SubscribeHost } from './subscribe.js';
import { verifyChecks, type CheckRunner } from './check-constraints.js';
import { SystemRelations } from '../system/system-relations.js';
import { resolveSessionFunction, type SessionFunctionContext } from '../system/session-functions.js';
import { systemRegistry, type EngineSystemContext } from './system-tables.js';
import { SessionSequences } from '../catalog/session-sequences.js';
import { nextvalTarget } from '../catalog/sequence-defaults.js';
import { foreignKeysOf } from '../batch/foreign-keys.js';
import { columnDefaultSql } from '../../sql/catalog.js';
import { settingStatement, showColumns, type SettingOutcome } from './settings-statements.js';
import type { SessionActivity } from '../metrics/engine-metrics.js';
import { explainAnalyzedDataflow, explainAnalyzedPlan, profilePlan } from '../metrics/explain-analyze.js';
import { InsertShapeCache, literalParameters, type CachedShape } from './insert-shape-cache.js';
import { PreparedStatementCache } from './prepared-statement-cache.js';
import { QUERY_PLAN_COLUMNS, armTimeout, classify, concurrentIndexStatement, endsFailedBlock, nodeKind, rowsResult, sameColumns, type OxbowPrepared, type Utility } from './statement-kinds.js';

export { rowsResult };
import { RecordingTableAccess, UndoLog, undoLimits } from './implicit-transaction.js';
import { savepointStatement, type SavepointAction } from './savepoints.js';
import { cursorStatement, declareOf, fetchColumns, SqlCursors } from './cursors.js';
import { executeOf, sqlPreparedStatement, SqlPreparedStatements } from './prepared-statements-sql.js';

/** Returned by a cached-shape INSERT whose execution failed before its commit: run it the ordinary way. */
const ORDINARY_PATH = Symbol('ordinary path');

let nextProcessId = 1000 + Math.floor(Math.random() * 1000);

export class EngineSession implements Session {
  readonly processId = nextProcessId++;
  readonly secretKey = Math.floor(Math.random() * 0x7fffffff);
  private readonly settings: SessionSettings;
  /** This session's currval / lastval over the engine's sequences (catalog/session-sequences.ts). */
  private get sequences(): SessionSequences {
    return (this.sessionSequences ??= new SessionSequences(this.core.sequences));
  }
  private sessionSequences: SessionSequences | undefined;
  private status: TransactionStatus = 'idle';
  /** The rows an explicit block (BEGIN ... COMMIT / ROLLBACK) wrote, for its ROLLBACK (implicit-transaction.ts). */
  private explicitBlock: UndoLog | undefined;
  /** DDL statements of the open block, implicit or explicit: a rollback cannot undo them. */
  private ddlInBlock = 0;
  private running: AbortController | undefined;
  /** Open SUBSCRIBE results (their COPY outlives execute()): cancel() and close() end them. */
  private readonly subscriptions = new Set<AbortController>();
  /**
   * The controller of the last DML statement when nothing aborted it, armed a timeout on it or
   * still listens to it: the next statement reuses it (a new AbortSignal costs 8-17 us in Node 20,
   * about 2% of a one-row INSERT).
   */
  private spareController: AbortController | undefined;
  /** The parsed search path and its cache key, for the search_path text they were parsed from. */
  private parsedSearchPath: { readonly setting: string; readonly path: readonly string[]; readonly key: string } | undefined;
  /** Secondary indexes by table for one catalog snapshot (secondaryIndexesOf). */
  private secondaryIndexes: { readonly snapshot: CatalogSnapshot; readonly byRelation: Map<number, readonly RelationDef[]> } | undefined;
  private closed = false;
  /** close() was called: the rollback of an open block, then the engine forgets the session. */
  private closing: Promise<void> | undefined;
  /** Statements, Query messages and pipeline ends running (close() waits until none is). */
  private busy = 0;
  /** close() waiting for the running statement (or Query message) to end. */
  private settledWaiters: (() => void)[] = [];
  readonly user: string;
  readonly database: string;
  /** pg_stat_activity: when the session started, the statement running or last run, since when. */
  private readonly backendStartMillis = Date.now();
  private readonly clientAddress: string | null;
  private readonly clientPort: number | null;
  private lastQuery = '';
  private queryStartMillis: number | null = null;
  private stateChangeMillis = Date.now();
  /** Plans of INSERT ... VALUES statements by shape (texts that differ only in literals). */
  private readonly insertShapes = new InsertShapeCache();
  /** Extended-protocol statements by text and declared types (a Parse of the same text reuses its parse and plan). */
  private readonly preparedStatements = new PreparedStatementCache<OxbowPrepared>();
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
  /** DECLARE ... CURSOR's cursors (cursors.ts). */
  private readonly cursors = new SqlCursors();
  /** PREPARE's statements by name (prepared-statements-sql.ts). */
  private readonly sqlPrepared = new SqlPreparedStatements<OxbowPrepared>();

  constructor(
    private readonly core: EngineCore,
    parameters: StartupParameters,
    private readonly events: SessionEvents,
    private readonly onClose: (session: EngineSession) => void,
  ) {
    this.user = parameters.user;
    this.database = parameters.database;
    this.clientAddress = parameters.clientAddress ?? null;
    this.clientPort = parameters.clientPort ?? null;
    // Startup values reach the client in the initial ParameterStatus messages (reportedParameters),
    // so changes are announced only once the session is running.
    let started = false;
    this.settings = new SessionSettings(
      (name, value) => {
        if (started) this.events.parameterStatus(name, value);
      },
      { session_authorization: parameters.user },
    );
    for (const [name, value] of Object.entries(parameters.options)) this.applyStartupOption(name, value);
    // What the startup packet set is the session's start value, which RESET returns to.
    this.settings.sessionStarted();
    started = true;
    this.core.metrics.sessions.add(this);
  }

  /** What pg_stat_activity and oxbow_catalog.sessions show of this session. */
  activity(): SessionActivity {
    const running = this.running !== undefined;
    const state = running ? 'active' : this.status === 'idle' ? 'idle' : this.status === 'failed' ? 'idle in transaction (aborted)' : 'idle in transaction';
    return {
      pid: this.processId,
      user: this.user,
      database: this.database,
      applicationName: this.settings.get('application_name') ?? '',
      clientAddress: this.clientAddress,
      clientPort: this.clientPort,
      backendStartMillis: this.backendStartMillis,
      state,
      query: this.lastQuery,
      queryStartMillis: this.queryStartMillis,
      stateChangeMillis: this.stateChangeMillis,
    };
  }

  private applyStartupOption(name: string, value: string): void {
    if (name === 'options') {
      // `-c name=value` and `--name=value` switches, as libpq sends them.
      for (const match of value.matchAll(/(?:-c\s*|--)([A-Za-z_.]+)=(\S+)/g)) this.settings.set(match[1]!.replace(/-/g, '_'), match[2]!);
      return;
    }
    if (name === 'replication') throw new SqlError(SqlState.featureNotSupported, 'replication connections are not supported');
    this.settings.set(name, value);
  }

  reportedParameters(): ReadonlyMap<string, string> {
    return this.settings.reported();
  }

  setting(name: string): string | undefined {
    return this.settings.get(name);
  }

  transactionStatus(): TransactionStatus {
    return this.status;
  }

  statementFailed(_error: SqlError): void {
    if (this.status === 'inTransaction') this.status = 'failed';
  }

  cancel(): void {
    this.running?.abort(new SqlError(SqlState.queryCanceled, 'canceling statement due to user request'));
    for (const subscription of this.subscriptions) subscription.abort(new SqlError(SqlState.queryCanceled, 'canceling statement due to user request'));
  }

  /**
   * The client is gone (Terminate, a closed or broken socket, a FATAL error) or the server shuts
   * down: the running statement is cancelled and, once it and its Query message have ended, an open
   * block (explicit, or a pipeline's implicit one) is rolled back exactly as ROLLBACK would
   * (PostgreSQL aborts the transaction of a backend that exits). The returned Promise resolves once
   * that rollback is durable; the engine forgets the session only then, so a shutdown waits for it.
   */
  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    this.closed = true;
    this.core.metrics.sessions.delete(this);
    this.cancel();
    this.closing = this.rollBackOnClose();
    return this.closing;
  }

  private async rollBackOnClose(): Promise<void> {
    try {
      // The cancelled statement and the message it belongs to end first (a Query message's
      // endMessage rolls its own implicit block back).
      while (this.busy > 0) await new Promise<void>((resolve) => this.settledWaiters.push(resolve));
      const blocks = [this.implicitBlock, this.explicitBlock];
      this.implicitBlock = this.explicitBlock = undefined;
      this.inPipeline = false;
      if (this.status !== 'idle' || blocks[0] !== undefined) this.settings.endTransaction(false);
      this.status = 'idle';
      for (const block of blocks) {
        if (block === undefined) continue;
        block.discardPending();
        await this.rollBackRows(block, block === blocks[0] ? 'query' : 'transaction block');
      }
    } catch (error) {
      console.error('oxbow: error while rolling back a closed session:', error);
    } finally {
      this.onClose(this);
    }
  }

  /** A statement, a Query message or a pipeline's end stopped running: wakes a close() waiting for it. */
  private settled(): void {
    this.busy--;
    const waiters = this.settledWaiters;
    if (waiters.length === 0) return;
    this.settledWaiters = [];
    for (const resolve of waiters) resolve();
  }

  // ---- prepare ---------------------------------------------------------------------------

  prepareMany(sql: string): PreparedStatement[] {
    const shape = insertValuesShape(sql);
    if (shape !== undefined) {
      const prepared = this.shapePrepared(sql, shape);
      if (prepared !== undefined) return [prepared];
    }
    return parse(sql).map((statement) => this.prepared(sql, statement, [], false));
  }

  /**
   * A one-statement INSERT ... VALUES of literals, prepared from its cached shape (parsed once per
   * shape); undefined when the parameterized text does not parse (the ordinary path then reports
   * what the statement's own text gets).
   */
  private shapePrepared(sql: string, shape: InsertValuesShape): OxbowPrepared | undefined {
    let cached = this.insertShapes.get(shape.key);
    if (cached === undefined) {
      let statements: ParsedStatement[];
      try {
        statements = parse(shape.parameterizedText);
      } catch {
        return undefined;
      }
      if (statements.length !== 1 || nodeKind(statements[0]!) !== 'InsertStmt') return undefined;
      cached = this.insertShapes.add(shape.key, statements[0]!, shape.literals);
    }
    const text = sql.trim().replace(/;$/, '').trimEnd();
    return {
      sql,
      parsed: { node: cached.parsed.node, text, location: sql.indexOf(text) },
      utility: { kind: 'planned' },
      declaredParameterTypes: cached.declaredParameterTypes,
      parameterTypes: [],
      columns: null,
      shape: { cached, literals: shape.literals },
    };
  }

  /** The statement prepared the ordinary way (its own text parsed and planned). */
  private ordinaryPrepared(statement: OxbowPrepared): OxbowPrepared {
    const [parsed] = parse(statement.sql);
    return this.prepared(statement.sql, parsed!, [], false);
  }

  prepare(sql: string, parameterTypes: readonly (DataType | undefined)[]): PreparedStatement {
    const catalog = this.core.catalog.snapshot;
    const searchPath = this.currentSearchPath().key;
    const cached = this.preparedStatements.get(sql, parameterTypes, catalog, searchPath);
    if (cached !== undefined) return cached;
    const statements = parse(sql);
    if (statements.length > 1) {
      throw new SqlError(SqlState.syntaxError, 'cannot insert multiple commands into a prepared statement');
    }
    if (statements.length === 0) {
      // An empty query string (extended protocol): EmptyQueryResponse when executed.
      const empty: OxbowPrepared = { sql, parameterTypes: [], columns: null, parsed: { node: {} as Node, text: '', location: 0 }, utility: { kind: 'empty' }, declaredParameterTypes: [] };
      return empty;
    }
    const prepared = this.prepared(sql, statements[0]!, parameterTypes, true);
    if (prepared.utility.kind === 'planned') this.preparedStatements.add(sql, parameterTypes, catalog, searchPath, prepared);
    return prepared;
  }

  private prepared(sql: string, parsed: ParsedStatement, declared: readonly (DataType | undefined)[], eager: boolean): OxbowPrepared {
    const utility = classify(parsed);
    const statement: OxbowPrepared = {
      sql,
      parsed,
      utility,
      declaredParameterTypes: declared,
      parameterTypes: declared.map((parameterType) => parameterType ?? type('text')),
      columns: utility.kind === 'setting' ? showColumns(parsed.node as Node) : utility.kind === 'explainView' ? QUERY_PLAN_COLUMNS : null,
    };
    if (eager && utility.kind === 'show') return { ...statement, columns: this.show(parsed).columns };
    if (utility.kind === 'sqlPrepared' || utility.kind === 'cursor') return { ...statement, ...this.sqlStatementShape(parsed, declared, eager) };
    if (eager && utility.kind === 'planned') {
      const planned = this.plan(statement);
      return { ...statement, parameterTypes: planned.parameterTypes, columns: planned.columns, plan: { planned, catalog: this.core.catalog.snapshot, searchPath: this.currentSearchPath().key }, fixedResult: true };
    }
    return statement;
  }

  /** EXECUTE's and FETCH's result columns (known once PREPARE and DECLARE ran); DECLARE's parameter types when prepared by Parse. */
  private sqlStatementShape(parsed: ParsedStatement, declared: readonly (DataType | undefined)[], eager: boolean): { columns: readonly ColumnDescription[] | null; parameterTypes?: readonly DataType[] } {
    const node = parsed.node as Node;
    if ('ExecuteStmt' in node) return { columns: this.sqlPrepared.peek(executeOf(node).name)?.columns ?? null };
    if (!('DeclareCursorStmt' in node) || !eager) return { columns: fetchColumns(node, this.cursors) };
    const planned = this.planParsed({ node: declareOf(node).query, text: parsed.text, location: parsed.location }, declared);
    return { columns: null, parameterTypes: planned.parameterTypes };
  }

  plannerContext(parameterTypes: readonly (DataType | undefined)[]): PlannerContext {
    const functionContext: SessionFunctionContext = {
      systemContext: () => this.systemContext(),
      processId: this.processId,
      setSetting: (name, value, local) => {
        this.settings.set(name, value, local);
        return this.settings.show(name).value;
      },
      relationSizeBytes: (relationId) => {
        const relation = this.core.catalog.relationById(relationId);
        if (relation === undefined || (relation.kind !== 'table' && relation.kind !== 'materialized_view' && relation.kind !== 'source')) return 0;
        // stateTableOf opens it with its retention: another would change its version GC record.
        return stateTableOf(this.core.store, relation).stats().bytes;
      },
      sequences: this.sequences,
    };
    return {
      catalog: this.core.catalog,
      searchPath: this.searchPath(),
      parameterTypes,
      resolveSessionFunction: (name, argumentTypes) => resolveSessionFunction(name, argumentTypes, functionContext),
    };
  }

  systemContext(): EngineSystemContext {
    return {
      catalog: this.core.catalog.snapshot,
      settings: this.settings,
      user: this.user,
      database: this.database,
      searchPath: this.searchPath(),
      viewErrors: () => this.core.streams.errors.records(),
      backfills: () => this.core.streams.backfills.records(),
      checkpoints: this.core.settings.checkpointMetrics,
      sourceStatus: this.core.sourceStatus,
      readableWindow: (relationId) => this.core.store.readableWindow(relationId),
      defaultRetentionMs: this.core.settings.timeTravelRetentionMs,
      status: this.core.status,
      sessionObjects: { cursors: () => this.cursors.list(), preparedStatements: () => this.sqlPrepared.list() },
      sequenceValue: (relation) => this.core.sequences.peek(relation),
    };
  }

  searchPath(): string[] {
    return [...this.currentSearchPath().path];
  }

  /** nextval for a serial or identity column's per-row default in COPY FROM (catalog/sequence-defaults.ts). */
  nextSequenceValue(sequence: RelationDef): bigint {
    return this.sequences.nextval(sequence);
  }

  /** The search path, parsed once per search_path text (a copy is what callers get from searchPath()). */
  private currentSearchPath(): { readonly path: readonly string[]; readonly key: string } {
    const setting = this.settings.get('search_path')!;
    let parsed = this.parsedSearchPath;
    if (parsed === undefined || parsed.setting !== setting) {
      const path = this.settings.searchPath(this.user);
      parsed = this.parsedSearchPath = { setting, path, key: path.join('\0') };
    }
    return parsed;
  }

  private plan(statement: OxbowPrepared): PlannedStatement {
    return this.planParsed(statement.parsed, statement.declaredParameterTypes);
  }

  /** Plans a parsed statement, views expanded first (view-expansion.ts). */
  private planParsed(parsed: ParsedStatement, parameterTypes: readonly (DataType | undefined)[]): PlannedStatement {
    const searchPath = this.searchPath();
    return planStatement(expandViews(parsed, this.core.catalog, searchPath), this.plannerContext(parameterTypes));
  }

  /**
   * The statement's plan against the current catalog and search path: re-planned when either
   * changed since it was planned (a table dropped and created again, a column added, SET
   * search_path), as PostgreSQL's plan cache re-plans.
   */
  private currentPlan(statement: OxbowPrepared): PlannedStatement {
    const catalog = this.core.catalog.snapshot;
    const searchPath = this.currentSearchPath().key;
    const plan = statement.plan;
    if (plan !== undefined && plan.catalog === catalog && plan.searchPath === searchPath) return plan.planned;
    if (statement.fixedResult !== true) {
      statement.plan = { planned: this.plan(statement), catalog, searchPath };
      return statement.plan.planned;
    }
    // A Parse's parameter types stay as the client was told (PostgreSQL fixes them at Parse).
    const planned = this.planParsed(statement.parsed, statement.parameterTypes);
    if (!sameColumns(planned.columns, statement.columns)) {
      // The routine PostgreSQL names: postgres.js then prepares the statement again and retries.
      throw new SqlError(SqlState.featureNotSupported, 'cached plan must not change result type', { routine: 'RevalidateCachedQuery' });
    }
    // Same names and types; the table OIDs may be new (a table created again).
    (statement as { columns: readonly ColumnDescription[] | null }).columns = planned.columns;
    statement.plan = { planned, catalog, searchPath };
    return planned;
  }

  /** Bind and Describe of a prepared statement: its plan brought up to date (0A000 if its result would change). */
  revalidate(prepared: PreparedStatement): void {
    const statement = prepared as OxbowPrepared;
    if (statement.utility.kind === 'planned' && statement.shape === undefined && statement.fixedResult === true) this.currentPlan(statement);
  }

  evalContext(): EvalContext {
    return {
      statementTimeMicros: Date.now() * 1000,
      timeZone: this.settings.get('TimeZone')!,
      dateStyle: this.settings.get('DateStyle')!,
      intervalStyle: this.settings.get('IntervalStyle')!,
      extraFloatDigits: Number(this.settings.get('extra_float_digits')),
      objectName: (type, oid) => this.objectName(type, oid),
      objectOid: (type, text) => this.objectOid(type, text),
    };
  }

  /** The OID a reg* text names, against the current catalog and search path (Bind parameters). */
  objectOid(type: 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure', text: string): number {
    return objectOid(text, type, this.core.catalog, this.searchPath());
  }

  /** The name a reg* OID prints as (object-names.ts), against the current catalog and search path. */
  objectName(type: 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure', oid: number): string | undefined {
    return objectName(this.core.catalog.snapshot, this.searchPath(), type, oid);
  }

  // ---- execute ---------------------------------------------------------------------------

  async execute(prepared: PreparedStatement, options: ExecuteOptions): Promise<ExecuteResult> {
    const statement = prepared as OxbowPrepared;
    if (this.closed) throw new SqlError(SqlState.connectionFailure, 'the session is closed');
    if (this.status === 'failed' && !endsFailedBlock(statement.utility)) {
      throw new SqlError(SqlState.inFailedSqlTransaction, 'current transaction is aborted, commands ignored until end of transaction block');
    }
    const controller = this.statementController();
    this.running = controller;
    this.busy++;
    this.lastQuery = statement.parsed.text;
    this.queryStartMillis = this.stateChangeMillis = Date.now();
    this.core.metrics.statementsTotal++;
    const timeoutMs = this.settings.statementTimeoutMs();
    const timer = timeoutMs > 0 ? armTimeout(controller, timeoutMs) : undefined;
    this.pipelinedStatement = this.inPipeline && this.status === 'idle' && this.implicitBlock !== undefined && this.implicitKind === 'pipeline';
    if ((this.inMultiStatementMessage || this.inPipeline) && this.status === 'idle' && this.implicitBlock === undefined) {
      // A statement of a multi-statement Query (or of a pipeline) outside a block: it opens (or
      // joins) the implicit block, which endMessage() (endPipeline() at Sync) commits or rolls back.
      this.implicitBlock = new UndoLog();
      this.implicitKind = this.inMultiStatementMessage ? 'message' : 'pipeline';
      this.settings.beginTransaction();
    }
    this.openBlock()?.discardPending();
    // Outside a block each statement is its own transaction for settings too: set_config(..., true)
    // lasts until it ends, and a failed statement's set_config is undone (PostgreSQL's implicit one).
    const implicitTransaction = this.status === 'idle' && statement.utility.kind !== 'transaction' && this.implicitBlock === undefined;
    if (implicitTransaction) this.settings.beginTransaction();
    let succeeded = false;
    try {
      const result = await this.dispatch(statement, options, controller.signal);
      if (statement.utility.kind === 'ddl' && this.openBlock() !== undefined) this.ddlInBlock++;
      succeeded = true;
      // A DML statement's result holds nothing that reads the signal later (no cursor), so the
      // controller can serve the next statement; other results (a cursor, COPY) may read it later.
      if (statement.utility.kind === 'planned' && result.kind === 'command' && timer === undefined) this.spareController = controller;
      return result;
    } catch (error) {
      const reason = controller.signal.aborted ? (controller.signal.reason as unknown) : undefined;
      const failure = reason instanceof SqlError ? reason : toSqlError(error);
      if (this.status === 'inTransaction') this.status = 'failed';
      this.core.metrics.statementErrorsTotal++;
      throw failure;
    } finally {
      if (implicitTransaction) this.settings.endTransaction(succeeded);
      if (timer !== undefined) clearTimeout(timer);
      if (this.running === controller) this.running = undefined;
      this.stateChangeMillis = Date.now();
      this.settled();
    }
  }

  /** The spare controller if it is still unused by anyone (not aborted, no listener), else a new one. */
  private statementController(): AbortController {
    const spare = this.spareController;
    this.spareController = undefined;
    if (spare !== undefined && !spare.signal.aborted && getEventListeners(spare.signal, 'abort').length === 0) return spare;
    return new AbortController();
  }

  private async dispatch(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    const utility = statement.utility;
    switch (utility.kind) {
      case 'planned':
        return this.executePlannedStatement(statement, options, signal);
      case 'transaction':
        return { kind: 'command', commandTag: await this.transaction(utility.statement) };
      case 'savepoint':
        return { kind: 'command', commandTag: await savepointStatement(utility.action, utility.name, this.savepointHost()) };
      case 'sqlPrepared':
        return this.sqlPreparedStatement(statement, signal);
      case 'cursor':
        return this.cursorStatement(statement, options, signal);
      case 'setting':
        if ((statement.parsed.node as { DiscardStmt?: { target?: string } }).DiscardStmt?.target === 'DISCARD_ALL' && this.blockContext() === 'none') {
          // DISCARD ALL includes CLOSE ALL and DEALLOCATE ALL (a block's DISCARD ALL is 25001 in settingStatement).
          this.cursors.close(undefined);
          this.sqlPrepared.deallocate(undefined);
        }
        return this.settingResult(this.settingInContext(statement.parsed.node as Node));
      case 'ddl':
        return { kind: 'command', commandTag: await this.ddl(statement, signal) };
      case 'copy':
        return this.copy(statement, signal);
      case 'subscribe':
        return prepareSubscribe(statement.parsed, this.subscribeHost(), signal);
      case 'flush':
        return { kind: 'command', commandTag: 'FLUSH' };
      case 'empty':
        return { kind: 'empty' };
      case 'show': {
        const shown = this.show(statement.parsed);
        return rowsResult(shown.columns, shown.rows, () => 'SHOW');
      }
      case 'explainView': {
        const lines = this.explainAnalyzeView((statement.parsed.node as { OxbowExplainAnalyzeView: OxbowExplainAnalyzeView }).OxbowExplainAnalyzeView, statement.parsed.location);
        return rowsResult(QUERY_PLAN_COLUMNS, lines.map((line) => [line]), () => 'EXPLAIN');
      }
      case 'lock':
        return { kind: 'command', commandTag: this.lock(statement.parsed) };
      case 'refresh':
        return { kind: 'command', commandTag: this.refresh(statement.parsed) };
      case 'truncate':
        return this.truncate(statement.parsed, signal);
      case 'unsupported':
        throw new SqlError(SqlState.featureNotSupported, utility.message);
    }
  }

  /**
   * TRUNCATE [TABLE] t [, ...] (dbt empties a seed's table with it before loading it again): a
   * DELETE of every row of each table, so views and indexes follow as for any delete (outside a
   * transaction block each table's DELETE commits on its own). RESTART IDENTITY is 0A000.
   */
  private async truncate(parsed: ParsedStatement, signal: AbortSignal): Promise<ExecuteResult> {
    const node = (parsed.node as { TruncateStmt: { relations?: Node[]; restart_seqs?: boolean } }).TruncateStmt;
    if (node.restart_seqs === true) throw new SqlError(SqlState.featureNotSupported, 'TRUNCATE ... RESTART IDENTITY is not supported');
    const catalog = this.core.catalog.snapshot;
    const deletes: string[] = [];
    for (const relationNode of node.relations ?? []) {
      const relation = (relationNode as { RangeVar: RangeVar }).RangeVar;
      const name = relation.schemaname === undefined ? relation.relname! : `${relation.schemaname}.${relation.relname!}`;
      const position = (relation.location ?? 0) + parsed.location + 1;
      const found = catalog.resolveRelation(relation.schemaname, relation.relname!, this.searchPath());
      if (found === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position });
      if (found.kind !== 'table') throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a table`, { position });
      deletes.push(`DELETE FROM ${quoteName(found.schema)}.${quoteName(found.name)}`);
    }
    for (const text of deletes) {
      const planned = this.planParsed(parse(text)[0]!, []);
      await this.runPlanned(planned, [], signal, false);
    }
    return { kind: 'command', commandTag: 'TRUNCATE TABLE' };
  }

  /**
   * REFRESH MATERIALIZED VIEW [CONCURRENTLY] name (a restore of pg_dump's output sends it): an oxbow
   * materialized view is kept up to date by its dataflow, so this checks the view and notes that.
   * WITH NO DATA would empty it until the next refresh, which a maintained view cannot be: 0A000.
   */
  private refresh(parsed: ParsedStatement): string {
    const node = (parsed.node as { RefreshMatViewStmt: { relation: RangeVar; skipData?: boolean } }).RefreshMatViewStmt;
    const relation = node.relation;
    const name = relation.schemaname === undefined ? relation.relname! : `${relation.schemaname}.${relation.relname!}`;
    const position = (relation.location ?? 0) + parsed.location + 1;
    const found = this.core.catalog.snapshot.resolveRelation(relation.schemaname, relation.relname!, this.searchPath());
    if (found === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position });
    if (found.kind !== 'materialized_view') throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a materialized view`, { position });
    if (node.skipData === true) {
      throw new SqlError(SqlState.featureNotSupported, 'REFRESH MATERIALIZED VIEW ... WITH NO DATA is not supported', { hint: 'An oxbow materialized view is always populated and up to date.' });
    }
    this.events.notice({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `materialized view "${found.name}" is always up to date; REFRESH does nothing` });
    return 'REFRESH MATERIALIZED VIEW';
  }

  /**
   * LOCK TABLE ... IN ACCESS SHARE MODE (pg_dump's, before it reads): a statement of a transaction
   * block that checks the tables exist and holds nothing more, as a block's reads already see one
   * snapshot. Stronger modes would promise to keep writers out, which oxbow does not: 0A000.
   */
  private lock(parsed: ParsedStatement): string {
    const node = (parsed.node as { LockStmt: { relations?: Node[]; mode?: number } }).LockStmt;
    if (this.blockContext() === 'none') throw new SqlError(SqlState.noActiveSqlTransaction, 'LOCK TABLE can only be used in transaction blocks');
    const ACCESS_SHARE = 1;
    if ((node.mode ?? ACCESS_SHARE) !== ACCESS_SHARE) {
      throw new SqlError(SqlState.featureNotSupported, 'LOCK TABLE is supported IN ACCESS SHARE MODE only', { hint: 'A transaction block reads one snapshot; oxbow has no table locks that keep writers out.' });
    }
    const catalog = this.core.catalog.snapshot;
    for (const relationNode of node.relations ?? []) {
      const relation = (relationNode as { RangeVar: RangeVar }).RangeVar;
      if (catalog.resolveRelation(relation.schemaname, relation.relname!, this.searchPath()) === undefined) {
        const name = relation.schemaname === undefined ? relation.relname! : `${relation.schemaname}.${relation.relname!}`;
        throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position: (relation.location ?? 0) + parsed.location + 1 });
      }
    }
    return 'LOCK TABLE';
  }

  /** EXPLAIN ANALYZE [MATERIALIZED VIEW] name: the running view's operators with their counters. */
  private explainAnalyzeView(node: OxbowExplainAnalyzeView, location: number): string[] {
    const relation = node.relation;
    const catalog = this.core.catalog.snapshot;
    const found = catalog.resolveRelation(relation.schemaname, relation.relname!, this.searchPath());
    const name = relation.schemaname === undefined ? relation.relname! : `${relation.schemaname}.${relation.relname!}`;
    const position = (relation.location ?? 0) + location + 1;
    if (found === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position });
    if (node.analyze === false) return this.explainExistingView(found, name, position);
    if (found.kind !== 'materialized_view') throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a materialized view`, { position, hint: 'EXPLAIN ANALYZE of a query is EXPLAIN ANALYZE SELECT ...' });
    const dataflow = this.core.streams.all.find((candidate) => candidate.viewId === found.id);
    if (dataflow === undefined) throw new SqlError(SqlState.objectNotInPrerequisiteState, `materialized view "${name}" has no running dataflow`);
    return explainAnalyzedDataflow(dataflow);
  }

  /**
   * EXPLAIN [MATERIALIZED VIEW] name: a materialized view's streaming plan, as EXPLAIN CREATE
   * MATERIALIZED VIEW prints it for its definition; a view's query plan.
   */
  private explainExistingView(view: RelationDef, name: string, position: number): string[] {
    if ((view.kind !== 'materialized_view' && view.kind !== 'view') || view.definition === undefined) {
      throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a view or materialized view`, { position, hint: 'EXPLAIN of a query is EXPLAIN SELECT ...' });
    }
    const qualified = this.searchPath().includes(view.schema) ? quoteIdentifier(view.name) : `${quoteIdentifier(view.schema)}.${quoteIdentifier(view.name)}`;
    const text = view.kind === 'materialized_view' ? `EXPLAIN CREATE MATERIALIZED VIEW ${qualified} AS ${view.definition}` : `EXPLAIN ${view.definition}`;
    const [parsed] = parse(text);
    const planned = planStatement(expandViews(parsed!, this.core.catalog, this.searchPath()), this.plannerContext([]));
    if (planned.plan.kind !== 'Values') throw new SqlError(SqlState.internalError, 'EXPLAIN of a view did not plan to its lines');
    return planned.plan.rows.map((row) => String((row[0] as { value?: unknown }).value ?? ''));
  }

  /** EXPLAIN ANALYZE SELECT ...: runs the query with counters on every plan node, returns the annotated plan. */
  private async explainAnalyzeQuery(planned: PlannedStatement, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    const analyze = planned.analyze!;
    const profile = profilePlan(analyze.plan);
    const started = performance.now();
    const result = await executePlanned({ kind: 'query', columns: null, parameterTypes: planned.parameterTypes, plan: analyze.plan }, {
      tables: this.tableAccess(),
      parameters: options.parameters,
      evalContext: this.evalContext(),
      signal,
      profiler: profile,
    });
    const resultRows = result.rows.length;
    const lines = explainAnalyzedPlan(analyze.plan, profile.stats, analyze.verbose, performance.now() - started, resultRows);
    return rowsResult(planned.columns ?? QUERY_PLAN_COLUMNS, lines.map((line) => [line]), () => 'EXPLAIN');
  }

  /**
   * SET / SHOW / DISCARD in its transaction context. In a pipeline's implicit transaction (not a
   * transaction block to PostgreSQL) SET LOCAL warns as outside a block yet lasts until the Sync,
   * and DISCARD ALL after another statement is 25001.
   */
  private settingInContext(node: Node): SettingOutcome {
    const context = this.blockContext();
    const discardAll = (node as { DiscardStmt?: { target?: string } }).DiscardStmt?.target === 'DISCARD_ALL';
    if (context === 'pipeline' && discardAll) throw new SqlError(SqlState.activeSqlTransaction, 'DISCARD ALL cannot be executed within a pipeline');
    const pipelineBlock = this.status === 'idle' && this.implicitBlock !== undefined && this.implicitKind === 'pipeline';
    if (pipelineBlock && (node as { VariableSetStmt?: { is_local?: boolean } }).VariableSetStmt?.is_local === true) {
      const outcome = settingStatement(node, this.settings, true);
      return { ...outcome, notices: [{ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'SET LOCAL can only be used in transaction blocks' }, ...outcome.notices] };
    }
    return settingStatement(node, this.settings, context === 'block');
  }

  private settingResult(outcome: SettingOutcome): ExecuteResult {
    for (const notice of outcome.notices) this.events.notice(notice);
    if (outcome.rows === undefined) return { kind: 'command', commandTag: outcome.commandTag };
    return rowsResult(outcome.columns!, outcome.rows, () => outcome.commandTag);
  }

  private async transaction(statement: 'begin' | 'start' | 'commit' | 'rollback'): Promise<string> {
    switch (statement) {
      case 'begin':
      case 'start':
        if (this.status !== 'idle') {
          this.events.notice({ severity: 'WARNING', code: SqlState.activeSqlTransaction, message: 'there is already a transaction in progress' });
        } else if (this.implicitBlock !== undefined) {
          // BEGIN inside a message's implicit block makes it a regular block, the statements before
          // it included (PostgreSQL's rule): its settings transaction and its rows go on.
          this.status = 'inTransaction';
          this.explicitBlock = this.implicitBlock;
          this.implicitBlock = undefined;
        } else {
          this.status = 'inTransaction';
          this.explicitBlock = new UndoLog();
          this.ddlInBlock = 0;
          this.settings.beginTransaction();
        }
        return statement === 'begin' ? 'BEGIN' : 'START TRANSACTION';
      case 'commit': {
        const wasFailed = this.status === 'failed';
        if (this.status === 'idle') {
          this.events.notice({ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'there is no transaction in progress' });
          // In a message's implicit block, COMMIT closes it (later statements open a new one).
          await this.endImplicitBlock(true);
        } else {
          // A failed block's COMMIT is a ROLLBACK: its settings changes and rows are undone too.
          this.settings.endTransaction(!wasFailed);
          await this.endExplicitBlock(!wasFailed);
        }
        this.status = 'idle';
        return wasFailed ? 'ROLLBACK' : 'COMMIT';
      }
      case 'rollback':
        if (this.status === 'idle') {
          this.events.notice({ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'there is no transaction in progress' });
          // In a message's implicit block, ROLLBACK rolls it back (settings and rows).
          await this.endImplicitBlock(false);
        } else {
          // The block's settings and rows are undone.
          this.settings.endTransaction(false);
          await this.endExplicitBlock(false);
        }
        this.status = 'idle';
        return 'ROLLBACK';
    }
  }

  /** What SAVEPOINT / RELEASE / ROLLBACK TO work on (savepoints.ts). */
  private savepointHost() {
    return {
      status: this.status,
      block: this.explicitBlock,
      settings: this.settings,
      core: this.core,
      tableAccess: () => this.tableAccess(),
      ddlInBlock: this.ddlInBlock,
      cursorNames: () => this.cursors.names(),
      closeCursorsExcept: (names: ReadonlySet<string>) => this.cursors.closeExcept(names),
      resume: () => {
        this.status = 'inTransaction';
      },
      notice: (notice: Notice) => this.events.notice(notice),
    };
  }

  /** PREPARE / EXECUTE / DEALLOCATE (prepared-statements-sql.ts). */
  private sqlPreparedStatement(statement: OxbowPrepared, signal: AbortSignal): Promise<ExecuteResult> {
    const parsed = statement.parsed;
    return sqlPreparedStatement(parsed.node as Node, parsed.text, {
      statements: this.sqlPrepared,
      prepare: (query, declared) => this.prepared(statement.sql, { node: query, text: parsed.text, location: parsed.location }, declared, true),
      evaluate: async (select) => (await this.runQuery({ node: select, text: parsed.text, location: parsed.location }, signal)).rows[0]!.slice(),
      execute: (inner, parameters) => this.executePlannedStatement(inner, { parameters }, signal),
    });
  }

  /** DECLARE / FETCH / MOVE / CLOSE (cursors.ts). */
  private cursorStatement(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    const parsed = statement.parsed;
    return cursorStatement(parsed.node as Node, parsed.text, {
      cursors: this.cursors,
      inBlock: this.blockContext() === 'block',
      run: async (query) => {
        const planned = this.planParsed({ node: query, text: parsed.text, location: parsed.location }, statement.parameterTypes);
        if (planned.kind !== 'query' || planned.columns === null) return undefined;
        const result = await executePlanned(planned, { tables: this.tableAccess(), parameters: options.parameters, evalContext: this.evalContext(), signal });
        return { columns: planned.columns, rows: result.rows };
      },
      rowsResult,
    });
  }

  /** A SQL cursor's result columns, for a Describe of its portal (psycopg's server-side cursors send one). */
  describeCursor(name: string): { readonly columns: readonly ColumnDescription[]; readonly binary: boolean } | undefined {
    return this.cursors.describe(name);
  }

  /** The undo log of the open block, implicit or explicit. */
  private openBlock(): UndoLog | undefined {
    return this.implicitBlock ?? this.explicitBlock;
  }

  /** A DML or COPY statement committed: inside a block, its rows join the block's undo log. */
  private dataWritten(): void {
    this.openBlock()?.publish();
  }

  /** Ends the explicit block: COMMIT forgets its undo log, ROLLBACK writes its rows back. */
  private async endExplicitBlock(commit: boolean): Promise<void> {
    const block = this.explicitBlock;
    this.explicitBlock = undefined;
    if (block === undefined) return;
    block.discardPending();
    this.cursors.transactionEnded(commit);
    if (!commit) await this.rollBackRows(block, 'transaction block');
    this.ddlInBlock = 0;
  }

  /**
   * A multi-statement Query message begins (pgwire's simple-query loop): its statements outside an
   * explicit block run in one implicit block, committed or rolled back by endMessage().
   */
  beginMessage(statementCount: number): void {
    this.busy++;
    this.inMultiStatementMessage = statementCount > 1;
  }

  /**
   * The message ended (`failed`: a statement failed): its implicit block commits or rolls back. A
   * pipeline's open implicit block ends with it too (PostgreSQL commits at the end of a Query).
   */
  async endMessage(failed: boolean): Promise<void> {
    this.inMultiStatementMessage = false;
    this.inPipeline = false;
    try {
      await this.endImplicitBlock(!failed);
    } finally {
      this.settled();
    }
  }

  /** An Execute that may not be alone before its Sync: the Executes until endPipeline() share an implicit block. */
  beginPipeline(): void {
    this.inPipeline = true;
  }

  /** Sync (`failed`: a message since the last Sync failed): the pipeline's implicit block commits or rolls back. */
  async endPipeline(failed: boolean): Promise<void> {
    this.inPipeline = false;
    this.busy++;
    try {
      await this.endImplicitBlock(!failed);
    } finally {
      this.settled();
    }
  }

  /**
   * Where the running statement stands for PostgreSQL's PreventInTransactionBlock: in a block
   * (explicit, or a multi-statement Query's implicit one), after another statement of its
   * pipeline's implicit transaction, or neither.
   */
  private blockContext(): 'block' | 'pipeline' | 'none' {
    if (this.status !== 'idle') return 'block';
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
    this.settings.endTransaction(commit);
    this.cursors.transactionEnded(commit);
    if (!commit) await this.rollBackRows(block, 'query');
    this.ddlInBlock = 0;
  }

  /**
   * A rolled-back block's rows written back (its compensating epoch), with a WARNING for what it
   * cannot undo: rows past the log's bound, rows another session changed since, DDL.
   */
  private async rollBackRows(block: UndoLog, scope: 'query' | 'transaction block'): Promise<void> {
    const warn = (message: string, detail?: string) => this.events.notice({ severity: 'WARNING', code: SqlState.warning, message, ...(detail === undefined ? {} : { detail }) });
    const statements = (count: number) => `${count} statement${count === 1 ? '' : 's'}`;
    if (this.ddlInBlock > 0) warn(`rollback cannot undo ${statements(this.ddlInBlock)} of DDL in this ${scope}`, 'oxbow commits DDL at its own epoch; the rows this ' + scope + ' wrote are rolled back.');
    if (block.overflowed) {
      warn(`rollback cannot undo the rows this ${scope} wrote: more than ${undoLimits.rows} rows`, `${statements(block.statementsWritten)} of the ${scope} committed their rows at their own epochs.`);
      return;
    }
    try {
      const { skipped } = await block.rollBack(this.core, () => this.tableAccess());
      if (skipped > 0) {
        warn(`rollback left ${skipped} row${skipped === 1 ? '' : 's'} as ${skipped === 1 ? 'it was' : 'they were'} changed by another session or dropped since this ${scope} wrote ${skipped === 1 ? 'it' : 'them'}`);
      }
    } catch (error) {
      warn(`could not roll back the rows this ${scope} wrote: ${toSqlError(error).message}`);
    }
  }

  private tableAccess(): StoreTableAccess {
    const system = new SystemRelations(this.systemContext(), systemRegistry);
    const catalog = this.core.catalog;
    const args = [this.core.store, system, this.core.rowIds, this.core.store.committedEpoch, this.core.streams, (id: number) => this.secondaryIndexesOf(catalog.snapshot, id), this.core.sourceReplays, foreignKeysOf(catalog.snapshot)] as const;
    const block = this.openBlock();
    if (block !== undefined) return new RecordingTableAccess(...args).recordInto(block);
    return new StoreTableAccess(...args);
  }

  /** A table's secondary indexes in a catalog snapshot, found once per snapshot (each statement's table access asks for every table it writes). */
  private secondaryIndexesOf(snapshot: CatalogSnapshot, relationId: number): readonly RelationDef[] {
    let found = this.secondaryIndexes;
    if (found === undefined || found.snapshot !== snapshot) found = this.secondaryIndexes = { snapshot, byRelation: new Map() };
    let indexes = found.byRelation.get(relationId);
    if (indexes === undefined) found.byRelation.set(relationId, (indexes = snapshot.indexesOf(relationId)));
    return indexes;
  }

  private async executePlannedStatement(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    if (statement.shape !== undefined) return this.executeShape(statement, options, signal);
    const planned = this.currentPlan(statement);
    if (planned.analyze !== undefined) return this.explainAnalyzeQuery(planned, options, signal);
    return (await this.runPlanned(planned, options.parameters, signal, false)) as ExecuteResult;
  }

  /**
   * An INSERT ... VALUES from its cached shape: the cached plan run with the statement's literals.
   * Whatever fails before the commit (a literal its column refuses, a plan error, a constraint)
   * sends the statement through the ordinary path, whose answer (error text, SQLSTATE, position)
   * is the one a client gets; nothing was written (the epoch was aborted).
   */
  private async executeShape(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    const shape = statement.shape!;
    let planned: PlannedStatement;
    let parameters: Value[] | undefined;
    try {
      planned = this.shapePlan(shape.cached);
      // A table with a serial or identity column takes the ordinary path: a retry after a failure
      // would call nextval twice for the row (catalog/sequence-defaults.ts finds those defaults).
      const sequenced = planned.kind === 'insert' && (planned.targetRelation?.columns ?? []).some((column) => nextvalTarget(columnDefaultSql(column)) !== undefined);
      parameters = planned.kind === 'insert' && planned.columns === null && !sequenced ? literalParameters(shape.literals, planned.parameterTypes, this.evalContext()) : undefined;
    } catch {
      parameters = undefined;
    }
    if (parameters !== undefined) {
      const result = await this.runPlanned(planned!, parameters, signal, true);
      if (result !== ORDINARY_PATH) return result;
    }
    this.insertShapes.counts.ordinary++;
    this.openBlock()?.discardPending();
    return this.executePlannedStatement(this.ordinaryPrepared(statement), options, signal);
  }

  /** A cached shape's plan against the current catalog and search path. */
  private shapePlan(cached: CachedShape): PlannedStatement {
    const catalog = this.core.catalog.snapshot;
    const { path: searchPath, key: searchPathKey } = this.currentSearchPath();
    if (cached.plan === undefined || cached.plan.catalog !== catalog || cached.plan.searchPath !== searchPathKey) {
      const planned = planStatement(expandViews(cached.parsed, this.core.catalog, searchPath), this.plannerContext(cached.declaredParameterTypes));
      cached.plan = { planned, catalog, searchPath: searchPathKey };
      this.insertShapes.counts.planned++;
    }
    return cached.plan.planned;
  }

  /**
   * Runs a plan; a writing one inside the write lock, committed and durable before it returns.
   * With `orOrdinaryPath`, a failure before the commit (other than a cancel or timeout) returns
   * ORDINARY_PATH instead of throwing.
   */
  private async runPlanned(planned: PlannedStatement, parameters: readonly Value[], signal: AbortSignal, orOrdinaryPath: boolean): Promise<ExecuteResult | typeof ORDINARY_PATH> {
    const writes = planned.kind === 'insert' || planned.kind === 'update' || planned.kind === 'delete';
    const run = async () => {
      const tables = this.tableAccess();
      const result = await executePlanned(planned, {
        tables,
        parameters,
        evalContext: this.evalContext(),
        signal,
      });
      await verifyChecks(tables, this.checkRunner(signal));
      return result;
    };
    let result;
    if (writes) {
      const outcome = await this.core.writeLock.run(async () => {
        let ran;
        try {
          ran = await run();
          signal.throwIfAborted();
        } catch (error) {
          this.core.store.abort();
          if (orOrdinaryPath && !signal.aborted) return ORDINARY_PATH;
          throw error;
        }
        try {
          await this.core.commitDurable();
        } catch (error) {
          this.core.store.abort();
          throw error;
        }
        return ran;
      });
      if (outcome === ORDINARY_PATH) return ORDINARY_PATH;
      result = outcome;
      this.dataWritten();
    } else {
      result = await run();
    }
    if (planned.columns === null) return { kind: 'command', commandTag: result.commandTag };
    return rowsResult(planned.columns, result.rows, () => result.commandTag);
  }

  /** RisingWave's SHOW TABLES / SHOW COLUMNS / DESCRIBE / SHOW CREATE (show-objects.ts). */
  private show(parsed: ParsedStatement): ShowResult {
    const node = parsed.node as Partial<Record<'OxbowShowObjects' | 'OxbowShowCreate' | 'OxbowDescribe', unknown>>;
    const catalog = this.core.catalog.snapshot;
    const searchPath = this.searchPath();
    if (node.OxbowShowObjects !== undefined) return showObjects(node.OxbowShowObjects as OxbowShowObjects, catalog, searchPath, this.database);
    if (node.OxbowShowCreate !== undefined) return showCreate(node.OxbowShowCreate as OxbowShowCreate, catalog, searchPath);
    return describeRelation((node.OxbowDescribe as OxbowDescribe).relation, catalog, searchPath);
  }

  /** Result columns of a query, for CREATE VIEW. */
  describeQuery(query: Node, queryText: string): readonly ColumnDescription[] {
    const planned = this.planParsed({ node: query, text: queryText, location: 0 }, []);
    return planned.columns ?? [];
  }

  private async ddl(statement: OxbowPrepared, signal: AbortSignal): Promise<string> {
    const concurrently = concurrentIndexStatement(statement.parsed.node as Node);
    const context = concurrently === undefined ? 'none' : this.blockContext();
    if (context !== 'none') {
      // PostgreSQL's PreventInTransactionBlock (an explicit block, or a multi-statement Query's implicit one; a pipeline's).
      throw new SqlError(SqlState.activeSqlTransaction, `${concurrently} ${context === 'pipeline' ? 'cannot be executed within a pipeline' : 'cannot run inside a transaction block'}`);
    }
    const parsed = statement.parsed;
    return executeDdl(parsed, {
      host: this.core,
      context: {
        catalog: this.core.catalog.snapshot,
        searchPath: this.searchPath(),
        statementText: statement.sql.slice(parsed.location, parsed.location + parsed.text.length),
        statementLocation: parsed.location,
        describeQuery: (query, text) => this.describeQuery(query, text),
        planner: this.plannerContext([]),
        user: this.user,
      },
      planner: this.plannerContext([]),
      plan: (query) => this.planParsed(query, []),
      tableAccess: () => this.tableAccess(),
      tableAccessOf: (catalog) => new StoreTableAccess(this.core.store, new SystemRelations(this.systemContext(), systemRegistry), this.core.rowIds, this.core.store.committedEpoch, undefined, (id) => this.secondaryIndexesOf(catalog, id), this.core.sourceReplays, foreignKeysOf(catalog)),
      nextval: (sequence) => this.sequences.nextval(sequence),
      evalContext: () => this.evalContext(),
      evaluateConstantQuery: (sql, querySignal) => this.evaluateConstantQuery(sql, querySignal),
      notice: (notice) => this.events.notice(notice),
    }, signal);
  }

  private async copy(statement: OxbowPrepared, signal: AbortSignal): Promise<ExecuteResult> {
    const plan: CopyStatementPlan = {
      core: this.core,
      session: this,
      tableAccess: () => this.tableAccess(),
      evalContext: this.evalContext(),
      signal,
      onWrite: () => this.dataWritten(),
      verifyChecks: (access, contextOf) => verifyChecks(access, this.checkRunner(signal), contextOf),
    };
    const result = await prepareCopy(statement.parsed, plan);
    if (result.kind !== 'copyIn') return result;
    // CopyDone applies the rows after execute() returned: a close() meanwhile waits for it, so a
    // block's rollback includes them.
    return {
      ...result,
      end: async () => {
        this.busy++;
        try {
          return await result.end();
        } finally {
          this.settled();
        }
      },
    };
  }

  /** Evaluates CHECK queries (check-constraints.ts): planned once, run per written row. */
  private checkRunner(signal: AbortSignal): CheckRunner {
    return {
      evaluate: async (sql, parameterTypes, parameterRows) => {
        const [parsed] = parse(sql);
        const planned = planStatement(parsed!, this.plannerContext(parameterTypes));
        const verdicts: Value[] = [];
        for (const parameters of parameterRows) {
          const result = await executePlanned(planned, { tables: this.tableAccess(), parameters, evalContext: this.evalContext(), signal });
          verdicts.push(result.rows[0]?.[0] ?? null);
        }
        return verdicts;
      },
    };
  }

  private subscribeHost(): SubscribeHost {
    return {
      core: this.core,
      searchPath: this.searchPath(),
      inTransactionBlock: this.status !== 'idle' || this.implicitBlock !== undefined,
      planQuery: (parsed) => this.planParsed(parsed, []),
      runQuery: (parsed, signal) => this.runQuery(parsed, signal),
      evalContext: () => this.evalContext(),
      attach: (controller) => {
        this.subscriptions.add(controller);
        return () => this.subscriptions.delete(controller);
      },
    };
  }

  /** Runs a query given as text (a DEFAULT expression for COPY). */
  async evaluateConstantQuery(sql: string, signal: AbortSignal): Promise<Row[]> {
    const statements = parse(sql);
    const result = await this.runQuery(statements[0]!, signal);
    return result.rows;
  }

  /** Runs a query statement to rows (COPY (query) TO STDOUT). */
  async runQuery(parsed: ParsedStatement, signal: AbortSignal): Promise<{ columns: readonly ColumnDescription[]; rows: Row[] }> {
    const planned = this.planParsed(parsed, []);
    const result = await executePlanned(planned, { tables: this.tableAccess(), parameters: [], evalContext: this.evalContext(), signal });
    return { columns: planned.columns ?? [], rows: result.rows };
  }
}

function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
