// One client connection's session: the Session facade of engine.ts. It dispatches each statement
// by kind and owns the session's settings, cancellation, statement_timeout and the contexts a
// statement runs with (table access, planner, system relations). Preparing and planning (the plan
// caches, re-plans when the catalog changed) are statement-preparer.ts's; transaction status and
// blocks are transaction-blocks.ts's.
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
import type { Node } from '@pgsql/types';
import type { OxbowDeclareSubscribe, OxbowDeclareSubscriptionCursor, OxbowExplainAnalyzeView, ParsedStatement } from '../../sql/parser/ast.js';
import { parse } from '../../sql/parser/index.js';
import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import type { EvalContext } from '../../sql/functions.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { PlannerContext } from '../../planner/index.js';
import { executePlanned } from '../batch/index.js';
import { objectName } from '../catalog/object-names.js';
import { objectOid } from '../../planner/binder/context.js';
import type {
  ColumnDescription,
  ExecuteOptions,
  ExecuteResult,
  PreparedStatement,
  Session,
  SessionEvents,
  StartupParameters,
  TransactionStatus,
  WriteForwarding,
} from './engine.js';
import { BOOTSTRAP_ROLE_ID, type CatalogSnapshot } from '../catalog/catalog.js';
import { isMemberOf, requireSequencePrivilege } from '../catalog/privileges.js';
import { checkStatementPrivileges } from './privilege-check.js';
import { mustRunOnLeader, readOnlyError, writingCommand } from './read-only.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { EngineCore } from './engine-core.js';
import { SessionSettings } from './settings.js';
import { showStatement, type ShowResult } from './show-objects.js';
import { StoreTableAccess, stateTableOf } from '../batch/table-access.js';
import { executeDdl } from '../ddl/ddl-statement.js';
import { prepareCopy, type CopyStatementPlan } from './copy.js';
import { prepareSubscribe, type SubscribeHost } from './subscribe.js';
import { declareSubscribeCursor, declareSubscriptionCursor } from './subscribe-cursors.js';
import { checkRunnerOf, verifyChecks } from './check-constraints.js';
import { explainViewResult } from './explain-statements.js';
import { PlannedStatements, type PlannedStatementHost } from './planned-statements.js';
import { SystemRelations } from '../system/system-relations.js';
import { resolveSessionFunction, type SessionFunctionContext } from '../system/session-functions.js';
import type { ConnectionSsl } from '../system/ssl-functions.js';
import { systemRegistry, type EngineSystemContext } from './system-tables.js';
import { SessionSequences } from '../catalog/session-sequences.js';
import { foreignKeysOf } from '../batch/foreign-keys.js';
import { settingInContext, type SettingOutcome } from './settings-statements.js';
import type { SessionActivity } from '../metrics/engine-metrics.js';
import { armTimeout, concurrentIndexStatement, endsFailedBlock, rowsResult, type OxbowPrepared } from './statement-kinds.js';

export { rowsResult };
import { RecordingTableAccess } from './implicit-transaction.js';
import { savepointStatement } from './savepoints.js';
import { TransactionBlocks } from './transaction-blocks.js';
import { StatementPreparer } from './statement-preparer.js';
import { lockStatement, refreshStatement, truncateStatement, type TableStatementHost } from './table-statements.js';
import { cursorStatement, SqlCursors } from './cursors.js';
import { sqlPreparedStatement, SqlPreparedStatements } from './prepared-statements-sql.js';

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
  /** Transaction status, explicit and implicit blocks (transaction-blocks.ts). */
  private readonly blocks: TransactionBlocks;
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
  /** The session user's role (`session_user`), fixed at startup. */
  readonly sessionRoleId: number;
  /** The role each name SET ROLE accepted stood for then (currentRoleId). */
  private readonly roleIdsSet = new Map<string, number>();
  /** pg_stat_activity: when the session started, the statement running or last run, since when. */
  private readonly backendStartMillis = Date.now();
  private readonly clientAddress: string | null;
  private readonly clientPort: number | null;
  private readonly ssl: ConnectionSsl | undefined;
  private lastQuery = '';
  private queryStartMillis: number | null = null;
  private stateChangeMillis = Date.now();
  /** Parsing, planning, the plan caches (statement-preparer.ts). */
  private readonly preparer: StatementPreparer;
  /** What queries and DML, EXPLAIN statements and CHECK queries plan and run with. */
  private readonly statementHost: PlannedStatementHost;
  /** Queries and DML run (planned-statements.ts). */
  private readonly planned: PlannedStatements;
  /** TRUNCATE, REFRESH, LOCK (table-statements.ts). */
  private readonly tableStatementHost: TableStatementHost;
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
    if (core.settings.readOnly?.forward !== undefined) this.forwardTo = (sql) => this.leaderRoute(sql);
    const sessionRole = core.catalog.snapshot.role(parameters.user);
    this.sessionRoleId = sessionRole?.id ?? BOOTSTRAP_ROLE_ID;
    this.clientAddress = parameters.clientAddress ?? null;
    this.clientPort = parameters.clientPort ?? null;
    this.ssl = parameters.ssl;
    // Startup values reach the client in the initial ParameterStatus messages (reportedParameters),
    // so changes are announced only once the session is running.
    let started = false;
    this.settings = new SessionSettings(
      (name, value) => {
        if (started) this.events.parameterStatus(name, value);
      },
      {
        session_authorization: parameters.user,
        is_superuser: sessionRole === undefined || sessionRole.superuser ? 'on' : 'off',
        ...(core.settings.ssl === true ? { ssl: 'on' } : {}),
        oxbow_parallelism: String(core.settings.tuning?.parallelism ?? 1),
        oxbow_cores: String(core.cores),
        // A standby (read-only.ts): PostgreSQL's hot standby reports these, and the epoch it reads.
        ...(core.settings.readOnly === undefined
          ? {}
          : { in_hot_standby: 'on', default_transaction_read_only: 'on', transaction_read_only: 'on', oxbow_standby_epoch: core.settings.readOnly.epoch.toString() }),
      },
    );
    for (const [name, value] of Object.entries(parameters.options)) this.applyStartupOption(name, value);
    this.checkRoleSetting();
    // What the startup packet set is the session's start value, which RESET returns to.
    this.settings.sessionStarted();
    started = true;
    const settings = this.settings;
    this.blocks = new TransactionBlocks({ core, settings, cursors: this.cursors, tableAccess: () => this.tableAccess(), notice: (notice) => this.events.notice(notice) });
    this.preparer = new StatementPreparer({
      core,
      cursors: this.cursors,
      sqlPrepared: this.sqlPrepared,
      plannerContext: (parameterTypes) => this.plannerContext(parameterTypes),
      currentSearchPath: () => this.currentSearchPath(),
      show: (parsed) => this.show(parsed),
    });
    this.statementHost = {
      core,
      preparer: this.preparer,
      blocks: this.blocks,
      searchPath: () => this.searchPath(),
      plannerContext: (parameterTypes) => this.plannerContext(parameterTypes),
      tableAccess: () => this.tableAccess(),
      evalContext: () => this.evalContext(),
    };
    this.planned = new PlannedStatements(this.statementHost);
    this.tableStatementHost = {
      core,
      searchPath: () => this.searchPath(),
      blockContext: () => this.blocks.blockContext(),
      notice: (notice) => this.events.notice(notice),
      runDelete: async (text, signal) => {
        await this.planned.run(this.preparer.planParsed(parse(text)[0]!, []), signal);
      },
    };
    this.core.metrics.sessions.add(this);
  }

  /** What pg_stat_activity and oxbow_catalog.sessions show of this session. */
  activity(): SessionActivity {
    const running = this.running !== undefined;
    const state = running ? 'active' : this.blocks.status === 'idle' ? 'idle' : this.blocks.status === 'failed' ? 'idle in transaction (aborted)' : 'idle in transaction';
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
      ssl: this.ssl ?? null,
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
    return this.blocks.status;
  }

  statementFailed(_error: SqlError): void {
    this.blocks.statementFailed();
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
    // Cursors over a subscription hold a reader each (subscribe-cursors.ts).
    this.cursors.close(undefined);
    this.closing = this.rollBackOnClose();
    return this.closing;
  }

  private async rollBackOnClose(): Promise<void> {
    try {
      // The cancelled statement and the message it belongs to end first (a Query message's
      // endMessage rolls its own implicit block back).
      while (this.busy > 0) await new Promise<void>((resolve) => this.settledWaiters.push(resolve));
      await this.blocks.rollBackOnClose();
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
    return this.preparer.prepareMany(sql);
  }

  prepare(sql: string, parameterTypes: readonly (DataType | undefined)[]): PreparedStatement {
    return this.preparer.prepare(sql, parameterTypes);
  }

  /**
   * A standby forwarding writes (read-only.ts): the leader's route when a statement of `sql` must
   * run there. Inside a block begun here (BEGIN READ ONLY) nothing is forwarded: a write gets 25006.
   * Absent on other engines, so pgwire does not even decode the text for it.
   */
  readonly forwardTo?: (sql: string) => WriteForwarding | undefined;

  private leaderRoute(sql: string): WriteForwarding | undefined {
    const forward = this.core.settings.readOnly?.forward;
    if (forward === undefined || this.blocks.blockContext() === 'block') return undefined;
    let statements: PreparedStatement[];
    try {
      statements = this.preparer.prepareMany(sql);
    } catch {
      return undefined;
    }
    if (!statements.some((statement) => mustRunOnLeader(statement as OxbowPrepared))) return undefined;
    return { ...forward, leaderAddress: () => forward.leaderAddress(), peerPassword: (user) => forward.peerPassword(user), sessionSettings: () => this.settings.sessionValues() };
  }

  /** Bind and Describe of a prepared statement: its plan brought up to date (0A000 if its result would change). */
  revalidate(prepared: PreparedStatement): void {
    this.preparer.revalidate(prepared);
  }

  plannerContext(parameterTypes: readonly (DataType | undefined)[]): PlannerContext {
    const batchWorkers = this.core.batchWorkers;
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
      ...(this.ssl === undefined ? {} : { ssl: this.ssl }),
    };
    return {
      catalog: this.core.catalog,
      searchPath: this.searchPath(),
      parameterTypes,
      resolveSessionFunction: (name, argumentTypes) => resolveSessionFunction(name, argumentTypes, functionContext),
      ...(this.core.streams.parallel === undefined ? {} : { streamParallelism: this.core.streams.parallel.parallelism, streamCores: this.core.streams.parallel.cores }),
      ...(this.core.settings.tuning?.keyedSourceWorkers === true ? { keyedSourceWorkers: true } : {}),
      ...(batchWorkers === undefined ? {} : { parallelScanWorkers: (relation: RelationDef) => batchWorkers.workersFor(relation.id) }),
    };
  }

  systemContext(): EngineSystemContext {
    return {
      catalog: this.core.catalog.snapshot,
      settings: this.settings,
      user: this.user,
      roleId: this.currentRoleId(),
      sessionRoleId: this.sessionRoleId,
      database: this.database,
      searchPath: this.searchPath(),
      viewErrors: () => this.core.streams.errors.records(),
      backfills: () => this.core.streams.backfills.records(),
      checkpoints: this.core.settings.checkpointMetrics,
      ...(this.core.settings.clusterNodes === undefined ? {} : { clusterNodes: this.core.settings.clusterNodes }),
      ...(this.core.streams.parallel === undefined ? {} : { vnodeMaps: () => this.core.streams.parallel?.vnodeMaps?.() ?? [] }),
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

  /**
   * The current role (`current_user`): the session user, or the role SET ROLE named (by the id it
   * had then, so a rename keeps it; a role dropped since falls back to the session user).
   */
  currentRoleId(): number {
    const name = this.settings.get('role');
    if (name === undefined || name === 'none') return this.sessionRoleId;
    const catalog = this.core.catalog.snapshot;
    const id = this.roleIdsSet.get(name) ?? catalog.role(name)?.id;
    return id !== undefined && catalog.roleById(id) !== undefined ? id : this.sessionRoleId;
  }

  /** SET ROLE's check of the `role` setting: 22023 for an unknown role, 42501 for one the session user is not a member of. */
  private checkRoleSetting(): void {
    const name = this.settings.get('role');
    if (name === undefined || name === 'none') return;
    const catalog = this.core.catalog.snapshot;
    const role = catalog.role(name);
    if (role === undefined) throw new SqlError(SqlState.invalidParameterValue, `role "${name}" does not exist`);
    if (!isMemberOf(catalog, this.sessionRoleId, role.id)) throw new SqlError(SqlState.insufficientPrivilege, `permission denied to set role "${name}"`);
    this.roleIdsSet.set(name, role.id);
  }

  /** nextval for a serial or identity column's per-row default in COPY FROM (catalog/sequence-defaults.ts). */
  nextSequenceValue(sequence: RelationDef): bigint {
    const roleId = this.currentRoleId();
    if (roleId !== BOOTSTRAP_ROLE_ID) requireSequencePrivilege(this.core.catalog.snapshot, roleId, sequence, 'nextval');
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
    if (this.blocks.status === 'failed' && !endsFailedBlock(statement.utility)) {
      throw new SqlError(SqlState.inFailedSqlTransaction, 'current transaction is aborted, commands ignored until end of transaction block');
    }
    this.refuseWriteWhenReadOnly(statement);
    this.checkPrivileges(statement);
    const controller = this.statementController();
    this.running = controller;
    this.busy++;
    this.lastQuery = statement.parsed.text;
    this.queryStartMillis = this.stateChangeMillis = Date.now();
    this.core.metrics.statementsTotal++;
    const timeoutMs = this.settings.statementTimeoutMs();
    const timer = timeoutMs > 0 ? armTimeout(controller, timeoutMs) : undefined;
    const implicitTransaction = this.blocks.beginStatement(statement.utility.kind);
    let succeeded = false;
    try {
      const result = await this.dispatch(statement, options, controller.signal);
      if (statement.utility.kind === 'ddl') this.blocks.ddlRan();
      succeeded = true;
      // A DML statement's result holds nothing that reads the signal later (no cursor), so the
      // controller can serve the next statement; other results (a cursor, COPY) may read it later.
      if (statement.utility.kind === 'planned' && result.kind === 'command' && timer === undefined) this.spareController = controller;
      return result;
    } catch (error) {
      const reason = controller.signal.aborted ? (controller.signal.reason as unknown) : undefined;
      const failure = reason instanceof SqlError ? reason : toSqlError(error);
      this.blocks.statementFailed();
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

  /** A read-only engine (a standby) refuses a writing statement with 25006 before it runs (read-only.ts). */
  private refuseWriteWhenReadOnly(statement: OxbowPrepared): void {
    const mode = this.core.settings.readOnly;
    if (mode === undefined) return;
    const command = writingCommand(statement);
    if (command === undefined) return;
    this.blocks.statementFailed();
    throw readOnlyError(mode, command);
  }

  /** 42501 unless the current role may run the statement (privilege-check.ts); remembered per statement. */
  private checkPrivileges(statement: OxbowPrepared): void {
    const roleId = this.currentRoleId();
    if (roleId === BOOTSTRAP_ROLE_ID) return;
    const catalog = this.core.catalog.snapshot;
    const searchPath = this.currentSearchPath().key;
    const checked = statement.privilegesChecked;
    if (checked !== undefined && checked.catalog === catalog && checked.roleId === roleId && checked.searchPath === searchPath) return;
    try {
      checkStatementPrivileges(statement.parsed.node as Node, catalog, roleId, this.searchPath(), statement.utility.kind === 'ddl');
    } catch (error) {
      this.blocks.statementFailed();
      throw error;
    }
    statement.privilegesChecked = { catalog, roleId, searchPath };
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
        return this.planned.execute(statement, options, signal);
      case 'transaction':
        return { kind: 'command', commandTag: await this.blocks.transaction(utility.statement) };
      case 'savepoint':
        return { kind: 'command', commandTag: await savepointStatement(utility.action, utility.name, this.blocks.savepointHost()) };
      case 'sqlPrepared':
        return this.sqlPreparedStatement(statement, signal);
      case 'cursor':
        return this.cursorStatement(statement, options, signal);
      case 'setting':
        if ((statement.parsed.node as { DiscardStmt?: { target?: string } }).DiscardStmt?.target === 'DISCARD_ALL' && this.blocks.blockContext() === 'none') {
          // DISCARD ALL includes CLOSE ALL and DEALLOCATE ALL (a block's DISCARD ALL is 25001 in settingStatement).
          this.cursors.close(undefined);
          this.sqlPrepared.deallocate(undefined);
        }
        return this.settingResult(this.settingStatement(statement.parsed.node as Node));
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
      case 'explainView':
        return explainViewResult((statement.parsed.node as { OxbowExplainAnalyzeView: OxbowExplainAnalyzeView }).OxbowExplainAnalyzeView, statement.parsed.location, this.statementHost);
      case 'lock':
        return { kind: 'command', commandTag: lockStatement(statement.parsed, this.tableStatementHost) };
      case 'refresh':
        return { kind: 'command', commandTag: refreshStatement(statement.parsed, this.tableStatementHost) };
      case 'truncate':
        return { kind: 'command', commandTag: await truncateStatement(statement.parsed, this.tableStatementHost, signal) };
      case 'unsupported':
        throw new SqlError(SqlState.featureNotSupported, utility.message);
    }
  }

  /** SET / SHOW / RESET ...; SET ROLE checks the role first (22023 unknown, 42501 not a member). */
  private settingStatement(node: Node): SettingOutcome {
    const role = (node as { VariableSetStmt?: { name?: string; kind?: string } }).VariableSetStmt;
    if (role?.name?.toLowerCase() !== 'role' || role.kind !== 'VAR_SET_VALUE') return settingInContext(node, this.settings, this.blocks.blockContext(), this.blocks.inPipelineBlock());
    const before = this.settings.get('role');
    const outcome = settingInContext(node, this.settings, this.blocks.blockContext(), this.blocks.inPipelineBlock());
    try {
      this.checkRoleSetting();
    } catch (error) {
      this.settings.set('role', before === 'none' ? undefined : before);
      throw error;
    }
    return outcome;
  }

  private settingResult(outcome: SettingOutcome): ExecuteResult {
    for (const notice of outcome.notices) this.events.notice(notice);
    if (outcome.rows === undefined) return { kind: 'command', commandTag: outcome.commandTag };
    return rowsResult(outcome.columns!, outcome.rows, () => outcome.commandTag);
  }

  /** PREPARE / EXECUTE / DEALLOCATE (prepared-statements-sql.ts). */
  private sqlPreparedStatement(statement: OxbowPrepared, signal: AbortSignal): Promise<ExecuteResult> {
    const parsed = statement.parsed;
    return sqlPreparedStatement(parsed.node as Node, parsed.text, {
      statements: this.sqlPrepared,
      prepare: (query, declared) => this.preparer.prepared(statement.sql, { node: query, text: parsed.text, location: parsed.location }, declared, true),
      evaluate: async (select) => (await this.runQuery({ node: select, text: parsed.text, location: parsed.location }, signal)).rows[0]!.slice(),
      execute: (inner, parameters) => {
        this.refuseWriteWhenReadOnly(inner);
        this.checkPrivileges(inner);
        return this.planned.execute(inner, { parameters }, signal);
      },
    });
  }

  /** DECLARE / FETCH / MOVE / CLOSE (cursors.ts). */
  private cursorStatement(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    const parsed = statement.parsed;
    return cursorStatement(parsed.node as Node, parsed.text, {
      cursors: this.cursors,
      inBlock: this.blocks.blockContext() === 'block',
      run: async (query) => {
        const planned = this.preparer.planParsed({ node: query, text: parsed.text, location: parsed.location }, statement.parameterTypes);
        if (planned.kind !== 'query' || planned.columns === null) return undefined;
        const result = await executePlanned(planned, { tables: this.tableAccess(), parameters: options.parameters, evalContext: this.evalContext(), signal });
        return { columns: planned.columns, rows: result.rows };
      },
      rowsResult,
      openStream: (node) => {
        const oxbow = node as unknown as { OxbowDeclareSubscribe?: OxbowDeclareSubscribe; OxbowDeclareSubscriptionCursor?: OxbowDeclareSubscriptionCursor };
        return oxbow.OxbowDeclareSubscribe !== undefined
          ? declareSubscribeCursor(parsed, oxbow.OxbowDeclareSubscribe, this.subscribeHost(), signal)
          : declareSubscriptionCursor(parsed, oxbow.OxbowDeclareSubscriptionCursor!, this.subscribeHost(), signal);
      },
      signal,
    });
  }

  /** A SQL cursor's result columns, for a Describe of its portal (psycopg's server-side cursors send one). */
  describeCursor(name: string): { readonly columns: readonly ColumnDescription[]; readonly binary: boolean } | undefined {
    return this.cursors.describe(name);
  }

  /**
   * A multi-statement Query message begins (pgwire's simple-query loop): its statements outside an
   * explicit block run in one implicit block, committed or rolled back by endMessage().
   */
  beginMessage(statementCount: number): void {
    this.busy++;
    this.blocks.beginMessage(statementCount);
  }

  /** The message ended (`failed`: a statement failed): its implicit block (and a pipeline's) commits or rolls back. */
  async endMessage(failed: boolean): Promise<void> {
    try {
      await this.blocks.endMessage(failed);
    } finally {
      this.settled();
    }
  }

  /** An Execute that may not be alone before its Sync: the Executes until endPipeline() share an implicit block. */
  beginPipeline(): void {
    this.blocks.beginPipeline();
  }

  /** Sync (`failed`: a message since the last Sync failed): the pipeline's implicit block commits or rolls back. */
  async endPipeline(failed: boolean): Promise<void> {
    this.busy++;
    try {
      await this.blocks.endPipeline(failed);
    } finally {
      this.settled();
    }
  }

  private tableAccess(): StoreTableAccess {
    const system = new SystemRelations(this.systemContext(), systemRegistry);
    const catalog = this.core.catalog;
    const args = [this.core.store, system, this.core.rowIds, this.core.store.committedEpoch, this.core.streams, (id: number) => this.secondaryIndexesOf(catalog.snapshot, id), this.core.sourceReplays, foreignKeysOf(catalog.snapshot)] as const;
    const block = this.blocks.openBlock();
    const access = block === undefined ? new StoreTableAccess(...args) : new RecordingTableAccess(...args).recordInto(block);
    access.batchWorkers = this.core.batchWorkers;
    return access;
  }

  /** A table's secondary indexes in a catalog snapshot, found once per snapshot (each statement's table access asks for every table it writes). */
  private secondaryIndexesOf(snapshot: CatalogSnapshot, relationId: number): readonly RelationDef[] {
    let found = this.secondaryIndexes;
    if (found === undefined || found.snapshot !== snapshot) found = this.secondaryIndexes = { snapshot, byRelation: new Map() };
    let indexes = found.byRelation.get(relationId);
    if (indexes === undefined) found.byRelation.set(relationId, (indexes = snapshot.indexesOf(relationId)));
    return indexes;
  }

  /** RisingWave's SHOW TABLES / SHOW COLUMNS / DESCRIBE / SHOW CREATE (show-objects.ts). */
  private show(parsed: ParsedStatement): ShowResult {
    return showStatement(parsed, this.core.catalog.snapshot, this.searchPath(), this.database);
  }

  /** Result columns of a query, for CREATE VIEW. */
  describeQuery(query: Node, queryText: string): readonly ColumnDescription[] {
    const planned = this.preparer.planParsed({ node: query, text: queryText, location: 0 }, []);
    return planned.columns ?? [];
  }

  private async ddl(statement: OxbowPrepared, signal: AbortSignal): Promise<string> {
    const concurrently = concurrentIndexStatement(statement.parsed.node as Node);
    const context = concurrently === undefined ? 'none' : this.blocks.blockContext();
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
        roleId: this.currentRoleId(),
        sessionRoleId: this.sessionRoleId,
      },
      planner: this.plannerContext([]),
      plan: (query) => this.preparer.planParsed(query, []),
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
      onWrite: () => this.blocks.dataWritten(),
      verifyChecks: (access, contextOf) => verifyChecks(access, checkRunnerOf(this.statementHost, signal), contextOf),
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

  private subscribeHost(): SubscribeHost {
    return {
      core: this.core,
      searchPath: this.searchPath(),
      inTransactionBlock: this.blocks.inAnyBlock(),
      planQuery: (parsed) => this.preparer.planParsed(parsed, []),
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
    const planned = this.preparer.planParsed(parsed, []);
    const result = await executePlanned(planned, { tables: this.tableAccess(), parameters: [], evalContext: this.evalContext(), signal });
    return { columns: planned.columns ?? [], rows: result.rows };
  }
}

