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
// subscriber: a round reads the epochs committed since the last one (at most a window of epoch
// time that halves when a round was large), sends them, and waits for the socket to drain (pgwire
// does, at each empty chunk) before the next; live subscribers at the same position share one
// read (`ChangeFeed`). A slow client costs one round of rows, and the engine never waits for it;
// a client further behind than the retention gets 72000.
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
import { type } from '../../sql/types.js';
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

export async function prepareSubscribe(parsed: ParsedStatement, host: SubscribeHost, signal: AbortSignal): Promise<ExecuteResult> {
  const node = (parsed.node as { OxbowSubscribe: OxbowSubscribe }).OxbowSubscribe;
  if (host.inTransactionBlock) throw new SqlError(SqlState.activeSqlTransaction, 'SUBSCRIBE cannot run inside a transaction block');
  for (const name of Object.keys(node.options)) {
    if (name !== 'progress' && name !== 'snapshot') throw new SqlError(SqlState.invalidParameterValue, `unrecognized SUBSCRIBE option "${name}"`, { hint: 'SUBSCRIBE takes PROGRESS and SNAPSHOT.' });
  }
  const progress = flag(node.options, 'progress', false);
  const snapshot = flag(node.options, 'snapshot', true);
  for (const [name, value] of Object.entries(node.copyOptions ?? {})) {
    if (name === 'format' && value.toLowerCase() === 'text') continue;
    throw new SqlError(SqlState.featureNotSupported, `COPY (SUBSCRIBE ...) TO STDOUT takes no option "${name}${value === '' ? '' : ` ${value}`}"`, { hint: 'Subscriptions are sent in the text format.' });
  }
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
  const asOf = await startEpoch(node, parsed, host, signal);
  const start = asOf ?? store.committedEpoch;
  const window = store.readableWindow(relation.id);
  if (asOf !== undefined && asOf < window.oldest) throw windowError(relation.id, asOf, window.oldest, window.latest, 'AS OF');

  const table = store.table({
    tableId: relation.id,
    columnTypes: relation.columns.map((column) => column.type),
    primaryKey: relation.primaryKey,
    ...(relation.retentionMs === undefined ? {} : { retentionMs: relation.retentionMs }),
  });
  const columns: ColumnDescription[] = [
    { name: 'oxbow_epoch', type: type('int8'), tableOid: 0, columnNumber: 0 },
    { name: 'oxbow_diff', type: type('int8'), tableOid: 0, columnNumber: 0 },
    ...(progress ? [{ name: 'oxbow_progressed', type: type('bool'), tableOid: 0, columnNumber: 0 }] : []),
    ...(planned.columns ?? []).map((column) => ({ name: column.name, type: column.type, tableOid: 0, columnNumber: 0 })),
  ];
  const valueTypes = (planned.columns ?? []).map((column) => column.type);
  const evalContext = host.evalContext();
  const options = defaultCopyOptions('text');
  const encoder = new TextEncoder();
  const valueFields = new Array<string | null>(valueTypes.length);
  /** A row's columns as the tail of its line (with the newline); the key that consolidates an epoch. */
  const body = (row: Row): string => {
    for (let index = 0; index < valueTypes.length; index++) {
      const value = row[index] ?? null;
      valueFields[index] = value === null ? null : functions.formatValue(value, valueTypes[index]!, evalContext);
    }
    return valueTypes.length === 0 ? '\n' : `\t${encodeCopyLine(valueFields, options)}`;
  };
  const line = (epoch: Epoch, diff: number, tail: string): Uint8Array => encoder.encode(`${epoch}\t${diff}${progress ? '\tf' : ''}${tail}`);
  const progressLine = (epoch: Epoch): Uint8Array => encoder.encode(`${epoch}\t0\tt${'\t\\N'.repeat(valueTypes.length)}\n`);
  const controller = new AbortController();
  const stop = controller.signal;
  const relationName = relation.name;
  let sent = 0;

  const through = async (rows: readonly Row[]): Promise<Row[]> => {
    if (rows.length === 0) return [];
    access.rows = rows;
    try {
      return (await executePlanned(planned, { tables: access, parameters: [], evalContext, signal: stop })).rows;
    } finally {
      access.rows = [];
    }
  };
  const checkPresent = (): void => {
    const catalog = core.catalog.snapshot;
    const gone = catalog.relationById(relation.id) === undefined ? relation : target !== undefined && catalog.relationById(target.id) === undefined ? target : undefined;
    if (gone !== undefined) {
      throw new SqlError(SqlState.undefinedTable, `${gone.kind === 'subscription' ? 'subscription' : 'relation'} "${gone.name}" was dropped; the subscription ended`);
    }
  };

  async function* data(): AsyncGenerator<Uint8Array> {
    const release = host.attach(controller);
    try {
      let position = start;
      if (snapshot) {
        while (store.committedEpoch < start) await nextCommit(core, stop, IDLE_CHECK_MS);
        checkPresent();
        let batch: Row[] = [];
        for (const row of table.scan({ epoch: start })) {
          batch.push(row);
          if (batch.length < SNAPSHOT_BATCH_ROWS) continue;
          for (const out of await through(batch)) {
            sent++;
            yield line(start, 1, body(out));
          }
          yield FLUSH;
          batch = [];
        }
        for (const out of await through(batch)) {
          sent++;
          yield line(start, 1, body(out));
        }
        if (progress) yield progressLine(start);
        yield FLUSH;
      }
      let stepMs = INITIAL_STEP_MS;
      for (;;) {
        stop.throwIfAborted();
        checkPresent();
        const committed = store.committedEpoch;
        if (committed <= position) {
          await nextCommit(core, stop, IDLE_CHECK_MS);
          continue;
        }
        const stepEnd = epochFromMillis(epochToMillis(position) + stepMs, 0xffff);
        const to = committed < stepEnd ? committed : stepEnd;
        let changes: EpochChanges[];
        try {
          changes = feedOf(core).changes(table, position, to);
        } catch (error) {
          // The history since `position` was collected (a client further behind than the retention).
          if (!(error instanceof SqlError) || error.code !== SqlState.snapshotTooOld) throw error;
          throw new SqlError(SqlState.snapshotTooOld, `the subscription to "${relationName}" fell behind its history: ${error.message}`, {
            ...(error.detail === undefined ? {} : { detail: error.detail }),
            hint: 'Keep the history longer with CREATE SUBSCRIPTION ... WITH (retention = ...), then resume with AS OF.',
          });
        }
        let rows = 0;
        for (const change of changes) {
          rows += change.deletes.length + change.inserts.length;
          // Consolidated per epoch: each row's net count, sent as that many -1 or +1 lines.
          const net = new Map<string, number>();
          for (const out of await through(change.deletes)) {
            const tail = body(out);
            net.set(tail, (net.get(tail) ?? 0) - 1);
          }
          for (const out of await through(change.inserts)) {
            const tail = body(out);
            net.set(tail, (net.get(tail) ?? 0) + 1);
          }
          for (const [tail, count] of net) {
            if (count === 0) continue;
            const bytes = line(change.epoch, count < 0 ? -1 : 1, tail);
            for (let copies = Math.abs(count); copies > 0; copies--) {
              sent++;
              yield bytes;
            }
          }
        }
        position = to;
        if (progress) yield progressLine(to);
        yield FLUSH;
        if (rows < SMALL_ROUND_ROWS && to === stepEnd) stepMs *= 2;
        else if (rows > LARGE_ROUND_ROWS && stepMs > 1) stepMs = Math.max(1, Math.floor(stepMs / 2));
      }
    } finally {
      release();
    }
  }
  return { kind: 'copyOut', format: 'text', columnCount: columns.length, data: data(), commandTag: () => `COPY ${sent}` };
}
