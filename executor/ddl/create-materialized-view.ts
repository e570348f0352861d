// CREATE MATERIALIZED VIEW (and CREATE SINK ... AS query, whose sink owns such a dataflow) and the
// rebuild of every view's dataflow at start.
//
// Create (inside the write lock, so no writer runs meanwhile): plan the query through the planner's
// stages and the incrementalization pass, allocating the relation id and the state table ids from
// the catalog; build the dataflow; backfill it from the inputs' rows at the last committed epoch
// (one consistent snapshot); write the catalog entry; commit it all in one epoch. Only then does
// the dataflow join the stream manager, so the next writer's changes flow into it.
//
// Restart: the catalog keeps each view's state table ids and search path; planning the stored
// definition again with those ids yields the same dataflow over the same state tables, so nothing
// is recomputed.

import { retentionOption } from './retention.js';
import type { CreateTableAsStmt, Node } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parse } from '../../sql/parser/index.js';
import type { Notice } from '../catalog/results.js';
import type { PlannerContext } from '../../planner/index.js';
import { allStateTables, materializedViewColumns, planStream, sourceRelationIds, STREAM_PLAN_VERSION, type PlannedStream } from '../../planner/stream/index.js';
import type { DdlHost } from './ddl-host.js';
import { commitCatalog } from './commit-catalog.js';
import { CatalogDraft, type CatalogSnapshot } from '../catalog/catalog.js';
import { backfillNotice, type BackfillRecord } from '../system/backfill-progress.js';
import { expandViews } from '../catalog/view-expansion.js';
import { referencedRelationIds } from './create-objects.js';
import { creationSchema, stringValue, viewQueryText } from './sql-text.js';
import { currentRoleId, type DdlContext } from './ddl-context.js';
import { StoreTableAccess, estimatedRows } from '../batch/table-access.js';
import { isKafkaReplayed } from '../connectors/kafka/kafka-replay.js';
import { withSign, type ChangeBatch } from '../stream/change-batch.js';
import type { Dataflow } from '../stream/dataflow.js';
import { carriesRowIds } from '../stream/scan.js';
import type { SinkOutput } from '../stream/stream-context.js';
import { deliversDirectly } from '../connectors/sink-target.js';

export interface CreateViewInput {
  readonly core: DdlHost;
  readonly body: CreateTableAsStmt;
  readonly ddl: DdlContext;
  readonly planner: PlannerContext;
  /**
   * CREATE SINK ... AS query (executor/ddl/create-sink.ts): the dataflow's rows belong to a
   * relation of kind 'sink' with these connector fields and this query text as its definition.
   */
  readonly sink?: Pick<RelationDef, 'options' | 'format' | 'encode'> & {
    readonly definition: string;
    readonly checkColumns?: (columns: readonly ColumnDef[]) => void;
    /** Checks (or makes) the sink's target before anything commits (a PostgreSQL table). */
    readonly prepareTarget?: (relation: RelationDef) => Promise<void>;
  };
}

export interface CreateViewOutcome {
  readonly commandTag: string;
  readonly notices: Notice[];
}

function planView(core: DdlHost, query: Node, text: string, planner: PlannerContext, searchPath: readonly string[], relationId: number, name: string, allocate: () => number, planVersion = STREAM_PLAN_VERSION, storedKey?: readonly number[]): PlannedStream {
  const expanded = expandViews({ node: query, text, location: 0 }, core.catalog, searchPath);
  return planStream(expanded.node as Node, planner, { relationId, name, allocateStateTableId: allocate, planVersion, ...(storedKey === undefined ? {} : { storedKey }) });
}

/** Everything CREATE MATERIALIZED VIEW decided before the backfill. */
interface Prepared {
  readonly relation: RelationDef;
  readonly next: CatalogSnapshot;
  readonly dataflow: Dataflow;
  readonly planned: PlannedStream;
  readonly commandTag: string;
  readonly retentionMs: number | undefined;
  /** After the backfill: a sink's change log takes the dataflow's changes from here on. */
  readonly resumeLog: () => void;
}

/**
 * The streaming plan version new views are created with (tests set 1 to make a view as an earlier
 * release made it, and check that a restart keeps its operators): this build's, or, for tests that
 * run oxbow as a process, OXBOW_STREAM_PLAN_VERSION's (a whole number from 1 to this build's; a
 * cluster test's view of version 10 keeps its state keys under vnode 0 as older views do).
 */
export const streamPlanDefaults = { version: streamPlanVersionOf(process.env['OXBOW_STREAM_PLAN_VERSION'] ?? '') ?? STREAM_PLAN_VERSION };

/** The plan version a text names (OXBOW_STREAM_PLAN_VERSION): a whole number from 1 to this build's, else undefined (bin/cli.ts refuses it at start). */
export function streamPlanVersionOf(text: string): number | undefined {
  const trimmed = text.trim();
  const version = /^\d+$/.test(trimmed) ? Number(trimmed) : NaN;
  return Number.isInteger(version) && version >= 1 && version <= STREAM_PLAN_VERSION ? version : undefined;
}

/** Defaults of the chunked backfill's reporting (tests lower them to report after every small chunk). */
export const backfillDefaults = { intervalMs: 3000, chunkRows: 10_000 };

/** How the chunked backfill reports. */
export interface BackfillReporting {
  /** Sends a NOTICE to the creating session. */
  notice(notice: Notice): void;
  /** At most one progress NOTICE per this many milliseconds (default `backfillDefaults`). */
  readonly intervalMs?: number;
  /** Rows pushed between two yields to the event loop (default `backfillDefaults`). */
  readonly chunkRows?: number;
  /**
   * The statement's cancel (CancelRequest, statement_timeout, the session or engine closing):
   * checked between chunks; the backfill then stops with the signal's reason and nothing commits.
   * Without it a close waited for the whole backfill.
   */
  readonly signal?: AbortSignal;
}

/**
 * CREATE MATERIALIZED VIEW with a backfill in chunks: between chunks the event loop runs (other
 * sessions read oxbow_catalog.backfill_progress; writers still wait for the lock), and the creating
 * session gets a progress NOTICE every few seconds. Call inside the engine's write lock.
 */
export async function createMaterializedViewInChunks(input: CreateViewInput, reporting: BackfillReporting): Promise<CreateViewOutcome> {
  const prepared = prepare(input);
  if ('notices' in prepared) return prepared;
  if (input.sink?.prepareTarget !== undefined) {
    try {
      await input.sink.prepareTarget(prepared.relation);
    } catch (error) {
      prepared.dataflow.dispose();
      throw error;
    }
  }
  const { core } = input;
  const progress = startProgress(core, prepared);
  let viewRows = 0;
  const pushSnapshot = async (): Promise<void> => {
    viewRows = netRows(prepared.dataflow.initialize());
    const intervalMs = reporting.intervalMs ?? backfillDefaults.intervalMs;
    const chunkRows = reporting.chunkRows ?? backfillDefaults.chunkRows;
    let lastNotice = Date.now();
    const access = snapshotAccess(core);
    for (const relation of snapshotRelations(core, prepared.planned)) {
      progress.relation = relation.name;
      let chunk: Row[] = [];
      const push = () => {
        // Aggregates hold their output across chunks (one change per group at the seal below).
        viewRows += netRows(prepared.dataflow.pushChunk(new Map([[relation.id, withSign(chunk, 1)]])));
        progress.rowsDone += chunk.length;
        chunk = [];
      };
      // A Kafka source that stores no rows: its replay from the broker, a fetched batch at a time.
      const parts: AsyncIterable<{ readonly rows: Iterable<Row> }> | Iterable<{ readonly rows: Iterable<Row> }> = isKafkaReplayed(relation)
        ? access.replayBatches(relation, reporting.signal)
        : [{ rows: access.scan(relation, {}) }];
      for await (const part of parts) {
        for (const row of part.rows) {
          chunk.push(row);
          if (chunk.length < chunkRows) continue;
          push();
          if (Date.now() - lastNotice >= intervalMs) {
            lastNotice = Date.now();
            reporting.notice({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: backfillNotice(progress) });
          }
          await new Promise((resolve) => setImmediate(resolve));
          reporting.signal?.throwIfAborted();
        }
      }
      if (chunk.length > 0) push();
    }
    viewRows += netRows(prepared.dataflow.seal());
    prepared.resumeLog();
  };
  try {
    await commitCatalog(core, prepared.next, pushSnapshot, currentRoleId(input.ddl));
  } catch (error) {
    core.streams.backfills.finish(progress, 'failed');
    // Never installed: its join caches leave the stream manager's budget.
    prepared.dataflow.dispose();
    throw error;
  }
  core.streams.install(prepared.dataflow);
  core.streams.backfills.finish(progress, 'done');
  return { commandTag: prepared.relation.kind === 'sink' ? prepared.commandTag : `SELECT ${viewRows}`, notices: [] };
}

function prepare(input: CreateViewInput): Prepared | CreateViewOutcome {
  const { core, body, ddl } = input;
  const target = body.into?.rel ?? {};
  const name = target.relname ?? '';
  const schema = creationSchema(ddl, target);
  const sink = input.sink;
  // PostgreSQL's tags: `SELECT n` (the view's rows) once created, CREATE MATERIALIZED VIEW when skipped.
  const commandTag = sink === undefined ? 'CREATE MATERIALIZED VIEW' : 'CREATE SINK';
  if (ddl.catalog.relation(schema, name) !== undefined) {
    if (body.if_not_exists === true) {
      return { commandTag, notices: [{ severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` }] };
    }
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }
  const retentionMs = retentionOption(body.into?.options)?.retentionMs;
  const queryText = sink?.definition ?? viewQueryText(ddl.statementText);
  const draft = new CatalogDraft(ddl.catalog);
  const relationId = draft.allocateId();
  // Ids are allocated in ascending order, so sorting them gives the allocation order back (restart).
  const searchPath = [...ddl.searchPath];
  const planVersion = streamPlanDefaults.version;
  const planned = planView(core, body.query!, queryText, input.planner, searchPath, relationId, name, () => draft.allocateId(), planVersion);
  const aliases = (body.into?.colNames ?? []).map(stringValue);
  if (aliases.length > planned.columns.length) throw new SqlError(SqlState.syntaxError, 'too many column names were specified');
  const columns = materializedViewColumns(planned.columns.map((column, index) => ({ name: aliases[index] ?? column.name, type: column.type })));
  const seen = new Set<string>();
  for (const column of columns) {
    if (seen.has(column.name)) throw new SqlError(SqlState.duplicateColumn, `column "${column.name}" specified more than once`);
    seen.add(column.name);
  }
  sink?.checkColumns?.(columns);
  // A sink's change log (executor/stream/change-log.ts), allocated after the dataflow's tables: an
  // append-only query's sink keeps no rows besides it. A sink that keeps its rows reads its
  // changes from their versions (connectors/sink-changes.ts): with a log beside its rows, a
  // PostgreSQL target lost a run of changes across SIGKILLs (test/sinks/postgres-sink-crash).
  const logOnly = sink !== undefined && planned.stream.kind === 'StreamMaterialize' && carriesRowIds(planned.stream.input);
  const changeLog = logOnly ? { tableId: draft.allocateId(), rowsKept: false } : undefined;
  // A sink that keeps its rows sends them as its first delivery: its backfill needs no log entries.
  // A target that takes the changes directly (a blackhole) gets them with no log at all.
  const direct = sink !== undefined && planned.stream.kind === 'StreamMaterialize' && deliversDirectly(sink.options);
  const liveLog = sinkOutput(changeLog, direct, true);
  const relation: RelationDef = {
    id: relationId,
    kind: sink === undefined ? 'materialized_view' : 'sink',
    schema,
    name,
    columns,
    // The key the view's rows are stored by (planner/stream/incrementalize.ts `viewStorageKey`: the query's unique key,
    // or the hidden column holding a source row id or the view's row number), else the whole row and its duplicate number.
    // A restart plans the view again with this key (`restoreDataflows`), so its layout never changes.
    primaryKey: planned.stream.kind === 'StreamMaterialize' && planned.stream.key !== undefined ? [...planned.stream.key] : columns.map((_, index) => index),
    definition: queryText,
    dependsOn: referencedRelationIds(body.query!, ddl),
    stream: { stateTableIds: allStateTables(planned.stream).map((table) => table.tableId).filter((id) => id !== relationId).sort((a, b) => a - b), searchPath, ...(planVersion >= 2 ? { planVersion } : {}), ...(changeLog === undefined ? {} : { changeLog }) },
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(sink === undefined ? {} : { options: sink.options, ...(sink.format === undefined ? {} : { format: sink.format }), ...(sink.encode === undefined ? {} : { encode: sink.encode }) }),
  };
  draft.putRelation(relation);
  const next = draft.finish();
  const dataflow = core.streams.build(relationId, planned.stream, retentionMs, liveLog);
  return { relation, next, dataflow, planned, commandTag, retentionMs, resumeLog: () => liveLog !== undefined && (liveLog.paused = false) };
}

/**
 * Where a sink's dataflow sends its output: straight to its target when it takes the changes
 * directly (a blackhole: counted, DirectChanges; a log the catalog lists for it is never opened),
 * else to its change log, if it has one. A sink without a log keeps its rows; `backfilling`, such
 * a sink counts or writes nothing through its backfill, whose rows its first delivery reads from
 * the relation.
 */
function sinkOutput(changeLog: { readonly tableId: number; readonly rowsKept: boolean } | undefined, direct: boolean, backfilling: boolean): SinkOutput | undefined {
  const rowsKept = changeLog?.rowsKept ?? true;
  const paused = backfilling && rowsKept;
  if (direct) return { kind: 'direct', rowsKept, paused };
  return changeLog === undefined ? undefined : { kind: 'log', tableId: changeLog.tableId, rowsKept, paused };
}

function startProgress(core: DdlHost, prepared: Prepared): BackfillRecord {
  let estimate = 0;
  for (const relationId of sourceRelationIds(prepared.planned.stream)) {
    const source = core.catalog.relationById(relationId);
    if (source === undefined) continue;
    try {
      estimate += estimatedRows(core.store, source, core.sourceReplays);
    } catch {
      // An estimate only.
    }
  }
  return core.streams.backfills.start(prepared.relation.id, prepared.relation.schema, prepared.relation.name, estimate, prepared.relation.kind === 'sink' ? 'sink' : 'materialized view');
}

/** Reads of the inputs at the last committed epoch (one snapshot). */
function snapshotAccess(core: DdlHost): StoreTableAccess {
  return new StoreTableAccess(core.store, { systemRows: () => [] }, core.rowIds, core.store.committedEpoch, undefined, undefined, core.sourceReplays);
}

/** Every input relation of the view. */
function snapshotRelations(core: DdlHost, planned: PlannedStream): RelationDef[] {
  return sourceRelationIds(planned.stream).map((relationId) => core.catalog.relationById(relationId)!);
}

/** The number of rows a batch of changes adds (inserts minus deletes). */
function netRows(changes: ChangeBatch): number {
  let rows = 0;
  for (const sign of changes.signs) rows += sign;
  return rows;
}

/** Rebuilds every materialized view's dataflow from the catalog (at start), without recomputing. */
export function restoreDataflows(core: DdlHost, plannerContext: (searchPath: readonly string[]) => PlannerContext): void {
  const views = core.catalog.snapshot
    .relations()
    .filter((relation) => (relation.kind === 'materialized_view' || relation.kind === 'sink') && relation.stream !== undefined)
    .sort((a, b) => a.id - b.id);
  for (const view of views) {
    const ids = [...view.stream!.stateTableIds];
    const statement = parse(view.definition ?? '')[0];
    if (statement === undefined) continue;
    let position = 0;
    const planned = planView(core, statement.node as Node, view.definition!, plannerContext(view.stream!.searchPath), view.stream!.searchPath, view.id, view.name, () => {
      const id = ids[position++];
      if (id === undefined) throw new SqlError(SqlState.internalError, `materialized view "${view.name}" needs more state tables than its catalog entry lists`);
      return id;
    }, view.stream!.planVersion ?? 1, view.primaryKey); // a view keeps the operators (and state layout) of the plan version it was created with, and the key it is stored by
    const changeLog = view.stream!.changeLog;
    const direct = view.kind === 'sink' && planned.stream.kind === 'StreamMaterialize' && deliversDirectly(view.options);
    core.streams.install(core.streams.build(view.id, planned.stream, undefined, sinkOutput(changeLog, direct, false)));
  }
}
