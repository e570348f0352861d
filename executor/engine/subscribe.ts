// SUBSCRIBE: a relation's changes pushed to the client as epochs commit, through COPY TO STDOUT
// (`COPY (SUBSCRIBE v) TO STDOUT`, or `SUBSCRIBE v` alone, which answers the same way).
//
// Each line is `oxbow_epoch, oxbow_diff[, oxbow_progressed], columns...` in COPY's text format.
// Where a subscription starts (S) and what it sends:
//   - S is the epoch of AS OF (an epoch number, or a moment: the last epoch at or before it), or
//     the last committed epoch without AS OF.
//   - With SNAPSHOT (the default) the first lines are the relation's contents at S, each a +1 at
//     epoch S; then the changes of every epoch after S, in epoch order.
//   - With SNAPSHOT = false only the changes of the epochs after S.
//   So a client that has every change up to and including epoch e resumes with
//   `AS OF e WITH (SNAPSHOT = false)`: no gap, no duplicate. Within an epoch the changes are
//   consolidated (an update that leaves the selected columns alone sends nothing).
//   - With PROGRESS, after the changes read in one round (every epoch committed up to some epoch
//     p), a line `p, 0, t, NULL...` says everything up to p was sent, also when nothing changed:
//     the epoch a client may resume from. Rows carry `f` there.
//
// Changes are read from the versioned state (connectors/sink-changes.ts), never kept per
// subscriber: a `SubscriptionReader` reads one round at a time, the snapshot in batches, then the
// epochs committed since the last round (at most a window of epoch time that halves when a round
// was large); live subscribers at the same position share one read (`ChangeFeed`). The COPY form
// sends each round and waits for the socket to drain (pgwire does, at each empty chunk) before
// asking for the next; a cursor (subscribe-cursors.ts) asks for the next round at a FETCH. A slow
// client costs one round of rows, and the engine never waits for it; a client further behind than
// the retention gets 72000.
//
// `SUBSCRIBE s` of a subscription (CREATE SUBSCRIPTION s FROM rel) reads rel, and ends when s is
// dropped. `SUBSCRIBE (SELECT cols FROM rel [WHERE pred])`: the query is planned once and must be a
// projection and filter over one table or materialized view (views expand first); each round's
// deleted and inserted rows of that relation run through the plan. Anything else is 0A000.
// The COPY ends with an error when the relation is dropped (42P01), on CancelRequest (57014) or
// when the client disconnects; it never ends on its own.

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import { epochFromMillis, epochToMillis, lastEpochAtMillis, type Epoch } from '../../sql/epoch.js';
import * as functions from '../../sql/functions.js';
import type { EvalContext } from '../../sql/functions.js';
import type { RelationDef } from '../../sql/catalog.js';
import { parse } from '../../sql/parser/index.js';
import type { OxbowSubscribe, ParsedStatement } from '../../sql/parser/ast.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { Plan } from '../../planner/plan.js';
import type { StateTable } from '../../storage/state-table.js';
import { windowError } from '../../storage/table-window.js';
import { executePlanned, type TableAccess } from '../batch/index.js';
import { changesBetween, type EpochChanges } from '../connectors/sink-changes.js';
import { defaultCopyOptions, encodeCopyLine } from './copy-format.js';
import type { EngineCore } from './engine-core.js';
import type { ColumnDescription, ExecuteResult } from './engine.js';

/** What SUBSCRIBE needs from the session that runs it. */
export interface SubscribeHost {
  readonly core: EngineCore;
  readonly searchPath: readonly string[];
  /** Inside BEGIN ... or a multi-statement Query's implicit block: SUBSCRIBE is refused there. */
  readonly inTransactionBlock: boolean;
  /** Plans a query in the session's context (views expanded). */
  planQuery(parsed: ParsedStatement): PlannedStatement;
  /** Runs a query to rows (the AS OF moment). */
  runQuery(parsed: ParsedStatement, signal: AbortSignal): Promise<{ rows: Row[] }>;
  evalContext(): EvalContext;
  /** Registers the subscription's controller so the session's cancel() and close() reach it; returns its release. */
  attach(controller: AbortController): () => void;
}

/** Rows read from the snapshot per round (one batch through the plan, one flush). */
const SNAPSHOT_BATCH_ROWS = 1024;
/** A round reads at most this much epoch time at first; it doubles after a small round, halves after a large one. */
const INITIAL_STEP_MS = 1000;
const SMALL_ROUND_ROWS = 10_000;
const LARGE_ROUND_ROWS = 100_000;
/** How often an idle subscription looks at the catalog (a drop commits an epoch, which wakes it sooner). */
const IDLE_CHECK_MS = 1000;
/** An empty chunk: pgwire sends what it holds and waits for the socket to drain. */
const FLUSH = new Uint8Array(0);

function flag(options: Readonly<Record<string, string>>, name: string, fallback: boolean): boolean {
  const value = options[name];
  if (value === undefined) return fallback;
  const lower = value.toLowerCase();
  if (lower === '' || lower === 'true' || lower === 'on' || lower === '1') return true;
  if (lower === 'false' || lower === 'off' || lower === '0') return false;
  throw new SqlError(SqlState.invalidParameterValue, `${name.toUpperCase()} requires a Boolean value`);
}

function quoted(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The Scan under a chain of Project / Filter nodes, or undefined for any other plan. */
function plainScan(plan: Plan): Extract<Plan, { kind: 'Scan' }> | undefined {
  let node: Plan = plan;
  while (node.kind === 'Project' || node.kind === 'Filter') node = node.input;
  return node.kind === 'Scan' && node.systemTime === undefined ? node : undefined;
}

/** The epoch of an AS OF expression: an integer literal is an epoch number, anything else a moment. */
async function startEpoch(node: OxbowSubscribe, parsed: ParsedStatement, host: SubscribeHost, signal: AbortSignal): Promise<Epoch | undefined> {
  const asOf = node.asOf;
  if (asOf === undefined) return undefined;
  const constant = (asOf as { A_Const?: { ival?: { ival?: number }; fval?: { fval?: string } } }).A_Const;
  if (constant !== undefined && constant.ival !== undefined) return BigInt(constant.ival.ival ?? 0);
  if (constant?.fval?.fval !== undefined && /^\d+$/.test(constant.fval.fval)) return BigInt(constant.fval.fval);
  const cast: Node = {
    TypeCast: { arg: asOf, typeName: { names: [{ String: { sval: 'pg_catalog' } }, { String: { sval: 'timestamptz' } }], typemod: -1 } },
  } as Node;
  const query: Node = { SelectStmt: { targetList: [{ ResTarget: { val: cast } }], limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' } } as Node;
  const { rows } = await host.runQuery({ node: query, text: parsed.text, location: parsed.location }, signal);
  const micros = rows[0]?.[0];
  if (typeof micros !== 'number' || !Number.isFinite(micros)) {
    throw new SqlError(SqlState.invalidParameterValue, 'SUBSCRIBE AS OF must be a finite moment or an epoch number', { position: (node.asOfLocation ?? 0) + 1 });
  }
  return lastEpochAtMillis(Math.floor(micros / 1000));
}

/**
 * The changes of a table between two epochs, shared by the subscribers that ask for the same range
 * at once (live subscribers all sit at the last committed epoch). Holds the last few ranges only.
 */
class ChangeFeed {
  private readonly recent = new Map<string, EpochChanges[]>();

  changes(table: StateTable, from: Epoch, to: Epoch): EpochChanges[] {
    const key = `${table.schema.tableId}:${from}:${to}`;
    let changes = this.recent.get(key);
    if (changes === undefined) {
      changes = changesBetween(table, from, to);
      this.recent.set(key, changes);
      if (this.recent.size > 8) this.recent.delete(this.recent.keys().next().value!);
    }
    return changes;
  }
}

const feeds = new WeakMap<EngineCore, ChangeFeed>();

function feedOf(core: EngineCore): ChangeFeed {
  let feed = feeds.get(core);
  if (feed === undefined) feeds.set(core, (feed = new ChangeFeed()));
  return feed;
}

/** Resolves at the next durable epoch, after `timeoutMs`, or rejects when `signal` aborts. */
function nextCommit(core: EngineCore, signal: AbortSignal, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      core.committedListeners.delete(done);
      signal.removeEventListener('abort', aborted);
      resolve();
    };
    const aborted = (): void => {
      clearTimeout(timer);
      core.committedListeners.delete(done);
      reject(signal.reason);
    };
    const timer = setTimeout(done, timeoutMs);
    core.committedListeners.add(done);
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/** Rows as the table access of a plan run over one batch of changed rows. */
class BatchAccess implements TableAccess {
  rows: readonly Row[] = [];
  constructor(private readonly relation: RelationDef) {}
  scan(relation: RelationDef): Iterable<Row> {
    if (relation.id !== this.relation.id) throw unsupportedQuery();
    return this.rows;
  }
  versions(): never {
    throw unsupportedQuery();
  }
  get(): undefined {
    throw unsupportedQuery();
  }
  insert(): never {
    throw unsupportedQuery();
  }
  delete(): never {
    throw unsupportedQuery();
  }
  nextRowId(): never {
    throw unsupportedQuery();
  }
  epochAt(timestampMicros: number): Epoch {
    return lastEpochAtMillis(Math.floor(timestampMicros / 1000));
  }
}

function unsupportedQuery(): SqlError {
  return new SqlError(SqlState.featureNotSupported, 'SUBSCRIBE to this query is not supported', {
    detail: 'SUBSCRIBE reads a table or materialized view, or SELECT columns FROM one of them [WHERE condition].',
    hint: 'Create a materialized view of the query and subscribe to it.',
  });
}

/** One round a subscription read: its changes in order and how far it has read. */
export interface SubscriptionRound {
  /** One entry per change in these parallel arrays: its epoch, its diff (+1 or -1), the row of the subscribed columns, and that row as COPY text (`\tcol\tcol\n`, the key an epoch is consolidated by). */
  readonly epochs: Epoch[];
  readonly diffs: number[];
  readonly rows: Row[];
  readonly texts: string[];
  /** Set once the snapshot was read, and after each round of changes: every epoch up to it has been read. */
  readonly progressed: Epoch | undefined;
  /** True for the rows of the snapshot (the relation's contents at the start), false for changes. */
  readonly snapshot: boolean;
}

/** Where a cursor of RisingWave's form starts (SINCE now() / begin() / unix_ms, or FULL). */
export type SubscriptionStart = { readonly kind: 'now' } | { readonly kind: 'begin' } | { readonly kind: 'full' } | { readonly kind: 'millis'; readonly millis: number };

/** A subscription opened by SUBSCRIBE or DECLARE: what it reads and its reader. */
export interface OpenedSubscription {
  /** The table or materialized view read (a subscription's relation). */
  readonly relation: RelationDef;
  /** The subscribed columns (the relation's, or the query's). */
  readonly columns: readonly ColumnDescription[];
  readonly progress: boolean;
  readonly reader: SubscriptionReader;
}

interface ReaderParts {
  readonly core: EngineCore;
  readonly table: StateTable;
  readonly planned: PlannedStatement;
  readonly access: BatchAccess;
  readonly relation: RelationDef;
  /** The relation or subscription named (a drop of either ends the subscription). */
  readonly target: RelationDef | undefined;
  readonly start: Epoch;
  readonly snapshot: boolean;
  readonly valueTypes: readonly DataType[];
  readonly evalContext: EvalContext;
}

/**
 * Reads a subscription round by round from the versioned state: the snapshot in batches, then the
 * changes of the epochs committed since the last round. Holds one snapshot iterator and no rows of
 * its own between rounds; `close()` ends it (the COPY's end, CLOSE of a cursor, the session's end).
 */
export class SubscriptionReader {
  private readonly controller = new AbortController();
  private readonly options = defaultCopyOptions('text');
  private readonly fields: (string | null)[];
  private snapshotRows: Iterator<Row> | undefined;
  private snapshotPending: boolean;
  private position: Epoch;
  private stepMs = INITIAL_STEP_MS;

  constructor(private readonly parts: ReaderParts) {
    this.fields = new Array<string | null>(parts.valueTypes.length);
    this.snapshotPending = parts.snapshot;
    this.position = parts.start;
  }

  /** Aborted by close(); the COPY form registers it with the session so a CancelRequest ends the COPY. */
  get controllerOfReads(): AbortController {
    return this.controller;
  }

  /** The last committed epoch: what a round can read up to now. */
  get committedEpoch(): Epoch {
    return this.parts.core.store.committedEpoch;
  }

  /** Whether rows of the epochs committed up to `epoch` remain to be read (the snapshot, or epochs after the position). */
  hasUnread(epoch: Epoch): boolean {
    return this.snapshotPending ? epoch >= this.parts.start : this.position < epoch;
  }

  close(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new SqlError(SqlState.queryCanceled, 'the subscription was closed'));
    this.snapshotRows?.return?.();
    this.snapshotRows = undefined;
  }

  /**
   * The next round, waiting for a commit while nothing new is committed: until `deadlineMillis`
   * (Date.now() time; Infinity waits for ever), then undefined. `wait` aborts the wait only: a
   * round being read is always finished, so a cancelled wait loses nothing.
   */
  async next(wait: AbortSignal, deadlineMillis: number): Promise<SubscriptionRound | undefined> {
    const { core } = this.parts;
    for (;;) {
      this.controller.signal.throwIfAborted();
      this.checkPresent();
      const committed = core.store.committedEpoch;
      if (this.snapshotPending ? committed < this.parts.start : committed <= this.position) {
        const remaining = deadlineMillis - Date.now();
        if (remaining <= 0) return undefined;
        await nextCommit(core, wait, Math.min(IDLE_CHECK_MS, remaining));
        continue;
      }
      return this.snapshotPending ? this.snapshotRound() : this.changeRound(committed);
    }
  }

  /** A row's columns as the tail of its COPY line (with the newline); the key that consolidates an epoch. */
  private text(row: Row): string {
    const { valueTypes, evalContext } = this.parts;
    for (let index = 0; index < valueTypes.length; index++) {
      const value = row[index] ?? null;
      this.fields[index] = value === null ? null : functions.formatValue(value, valueTypes[index]!, evalContext);
    }
    return valueTypes.length === 0 ? '\n' : `\t${encodeCopyLine(this.fields, this.options)}`;
  }

  private async through(rows: readonly Row[]): Promise<Row[]> {
    if (rows.length === 0) return [];
    const { access, planned, evalContext } = this.parts;
    access.rows = rows;
    try {
      return (await executePlanned(planned, { tables: access, parameters: [], evalContext, signal: this.controller.signal })).rows;
    } finally {
      access.rows = [];
    }
  }

  private checkPresent(): void {
    const { core, relation, target } = this.parts;
    const catalog = core.catalog.snapshot;
    const gone = catalog.relationById(relation.id) === undefined ? relation : target !== undefined && catalog.relationById(target.id) === undefined ? target : undefined;
    if (gone !== undefined) {
      throw new SqlError(SqlState.undefinedTable, `${gone.kind === 'subscription' ? 'subscription' : 'relation'} "${gone.name}" was dropped; the subscription ended`);
    }
  }

  /** The next batch of the snapshot: the relation's rows at the start, each a +1 at the start epoch. */
  private async snapshotRound(): Promise<SubscriptionRound> {
    const start = this.parts.start;
    this.snapshotRows ??= this.parts.table.scan({ epoch: start })[Symbol.iterator]();
    const batch: Row[] = [];
    let done = false;
    while (batch.length < SNAPSHOT_BATCH_ROWS) {
      const step = this.snapshotRows.next();
      if (step.done === true) {
        done = true;
        break;
      }
      batch.push(step.value);
    }
    const rows = await this.through(batch);
    const round: SubscriptionRound = { epochs: [], diffs: [], rows, texts: [], progressed: done ? start : undefined, snapshot: true };
    for (const row of rows) {
      round.epochs.push(start);
      round.diffs.push(1);
      round.texts.push(this.text(row));
    }
    if (done) {
      this.snapshotPending = false;
      this.snapshotRows = undefined;
    }
    return round;
  }

  /** The changes of the epochs after the position, up to `committed` (at most `stepMs` of epoch time), consolidated per epoch. */
  private async changeRound(committed: Epoch): Promise<SubscriptionRound> {
    const { core, table, relation } = this.parts;
    const position = this.position;
    const stepEnd = epochFromMillis(epochToMillis(position) + this.stepMs, 0xffff);
    const to = committed < stepEnd ? committed : stepEnd;
    let changes: EpochChanges[];
    try {
      changes = feedOf(core).changes(table, position, to);
    } catch (error) {
      // The history since `position` was collected (a reader further behind than the retention).
      if (!(error instanceof SqlError) || error.code !== SqlState.snapshotTooOld) throw error;
      throw new SqlError(SqlState.snapshotTooOld, `the subscription to "${relation.name}" fell behind its history: ${error.message}`, {
        ...(error.detail === undefined ? {} : { detail: error.detail }),
        hint: 'Keep the history longer with CREATE SUBSCRIPTION ... WITH (retention = ...), then resume with AS OF.',
      });
    }
    const round: SubscriptionRound = { epochs: [], diffs: [], rows: [], texts: [], progressed: to, snapshot: false };
    let read = 0;
    for (const change of changes) {
      read += change.deletes.length + change.inserts.length;
      // Consolidated per epoch: each row's net count, sent as that many -1 or +1 changes.
      const net = new Map<string, number>();
      const rowOf = new Map<string, Row>();
      for (const out of await this.through(change.deletes)) {
        const text = this.text(out);
        net.set(text, (net.get(text) ?? 0) - 1);
        rowOf.set(text, out);
      }
      for (const out of await this.through(change.inserts)) {
        const text = this.text(out);
        net.set(text, (net.get(text) ?? 0) + 1);
        rowOf.set(text, out);
      }
      for (const [text, count] of net) {
        if (count === 0) continue;
        const row = rowOf.get(text)!;
        for (let copies = Math.abs(count); copies > 0; copies--) {
          round.epochs.push(change.epoch);
          round.diffs.push(count < 0 ? -1 : 1);
          round.rows.push(row);
          round.texts.push(text);
        }
      }
    }
    this.position = to;
    if (read < SMALL_ROUND_ROWS && to === stepEnd) this.stepMs *= 2;
    else if (read > LARGE_ROUND_ROWS && this.stepMs > 1) this.stepMs = Math.max(1, Math.floor(this.stepMs / 2));
    return round;
  }
}

/**
 * Opens a subscription: checks its options, plans its query, finds where it starts (AS OF, or
 * `since` for RisingWave's cursor) and returns its reader, which reads nothing until asked.
 */
export async function openSubscription(parsed: ParsedStatement, node: OxbowSubscribe, host: SubscribeHost, signal: AbortSignal, since?: SubscriptionStart): Promise<OpenedSubscription> {
  for (const name of Object.keys(node.options)) {
    if (name !== 'progress' && name !== 'snapshot') throw new SqlError(SqlState.invalidParameterValue, `unrecognized SUBSCRIBE option "${name}"`, { hint: 'SUBSCRIBE takes PROGRESS and SNAPSHOT.' });
  }
  const progress = flag(node.options, 'progress', false);
  const core = host.core;
  let query: ParsedStatement;
  let target: RelationDef | undefined;
  if (node.relation !== undefined) {
    const { schemaname, relname } = node.relation;
    target = core.catalog.snapshot.resolveRelation(schemaname, relname!, host.searchPath);
    const name = schemaname === undefined ? relname! : `${schemaname}.${relname!}`;
    if (target === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position: (node.relation.location ?? 0) + 1 });
    // A subscription (CREATE SUBSCRIPTION) stands for the relation it follows.
    const followed = target.kind === 'subscription' ? core.catalog.snapshot.relationById(target.dependsOn[0] ?? -1) : target;
    if (followed === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position: (node.relation.location ?? 0) + 1 });
    const [statement] = parse(`SELECT * FROM ${quoted(followed.schema)}.${quoted(followed.name)}`);
    query = statement!;
  } else {
    if (Object.keys(node.query!)[0] !== 'SelectStmt') throw unsupportedQuery();
    query = { node: node.query!, text: parsed.text, location: parsed.location };
  }
  const planned = host.planQuery(query);
  const scan = plainScan(planned.plan);
  if (planned.kind !== 'query' || scan === undefined) throw unsupportedQuery();
  const relation = scan.relation;
  if (relation.kind !== 'table' && relation.kind !== 'materialized_view') {
    throw new SqlError(SqlState.featureNotSupported, `SUBSCRIBE to ${relation.kind === 'view' ? 'view' : relation.kind} "${relation.name}" is not supported`, {
      hint: 'SUBSCRIBE reads tables and materialized views (and plain views over one of them).',
    });
  }
  const access = new BatchAccess(relation);
  // Anything the plan reads besides the relation (a subquery over another table) fails here, not later.
  await executePlanned(planned, { tables: access, parameters: [], evalContext: host.evalContext(), signal });

  const store = core.store;
  const window = store.readableWindow(relation.id);
  let start: Epoch;
  let snapshot: boolean;
  if (since === undefined) {
    snapshot = flag(node.options, 'snapshot', true);
    const asOf = await startEpoch(node, parsed, host, signal);
    start = asOf ?? store.committedEpoch;
    if (asOf !== undefined && asOf < window.oldest) throw windowError(relation.id, asOf, window.oldest, window.latest, 'AS OF');
  } else {
    snapshot = since.kind === 'full';
    // SINCE unix_ms: the changes of the epochs at or after that millisecond.
    start = since.kind === 'begin' ? window.oldest : since.kind === 'millis' ? lastEpochAtMillis(since.millis - 1) : store.committedEpoch;
    if (start < window.oldest) {
      const error = windowError(relation.id, start, window.oldest, window.latest, 'SINCE');
      throw new SqlError(error.code, error.message.replace(`of table ${relation.id}`, `of "${relation.name}"`), {
        ...(error.detail === undefined ? {} : { detail: error.detail }),
        hint: "A subscription keeps its relation's changes for its retention (CREATE SUBSCRIPTION ... WITH (retention = ...)): start within it, or with SINCE begin().",
      });
    }
  }

  const table = store.table({
    tableId: relation.id,
    columnTypes: relation.columns.map((column) => column.type),
    primaryKey: relation.primaryKey,
    ...(relation.retentionMs === undefined ? {} : { retentionMs: relation.retentionMs }),
  });
  const columns = (planned.columns ?? []).map((column) => ({ name: column.name, type: column.type, tableOid: 0, columnNumber: 0 }));
  const reader = new SubscriptionReader({
    core,
    table,
    planned,
    access,
    relation,
    target,
    start,
    snapshot,
    valueTypes: columns.map((column) => column.type),
    evalContext: host.evalContext(),
  });
  return { relation, columns, progress, reader };
}

/** `SUBSCRIBE ...` and `COPY (SUBSCRIBE ...) TO STDOUT`: the rounds as COPY text lines. */
export async function prepareSubscribe(parsed: ParsedStatement, host: SubscribeHost, signal: AbortSignal): Promise<ExecuteResult> {
  const node = (parsed.node as { OxbowSubscribe: OxbowSubscribe }).OxbowSubscribe;
  if (host.inTransactionBlock) {
    throw new SqlError(SqlState.activeSqlTransaction, 'SUBSCRIBE cannot run inside a transaction block', { hint: 'Inside a block, read it through a cursor: DECLARE c CURSOR FOR SUBSCRIBE ...; FETCH 100 c.' });
  }
  for (const [name, value] of Object.entries(node.copyOptions ?? {})) {
    if (name === 'format' && value.toLowerCase() === 'text') continue;
    throw new SqlError(SqlState.featureNotSupported, `COPY (SUBSCRIBE ...) TO STDOUT takes no option "${name}${value === '' ? '' : ` ${value}`}"`, { hint: 'Subscriptions are sent in the text format.' });
  }
  const { columns, progress, reader } = await openSubscription(parsed, node, host, signal);
  const encoder = new TextEncoder();
  const line = (epoch: Epoch, diff: number, tail: string): Uint8Array => encoder.encode(`${epoch}\t${diff}${progress ? '\tf' : ''}${tail}`);
  const progressLine = (epoch: Epoch): Uint8Array => encoder.encode(`${epoch}\t0\tt${'\t\\N'.repeat(columns.length)}\n`);
  const controller = reader.controllerOfReads;
  let sent = 0;

  async function* data(): AsyncGenerator<Uint8Array> {
    const release = host.attach(controller);
    try {
      for (;;) {
        const round = (await reader.next(controller.signal, Infinity))!;
        for (let index = 0; index < round.texts.length; index++) {
          sent++;
          yield line(round.epochs[index]!, round.diffs[index]!, round.texts[index]!);
        }
        if (progress && round.progressed !== undefined) yield progressLine(round.progressed);
        yield FLUSH;
      }
    } finally {
      release();
      reader.close();
    }
  }
  const columnCount = 2 + (progress ? 1 : 0) + columns.length;
  return { kind: 'copyOut', format: 'text', columnCount, data: data(), commandTag: () => `COPY ${sent}` };
}
