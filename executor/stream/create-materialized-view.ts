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

import { retentionOption } from '../ddl/retention.js';
import type { CreateTableAsStmt, Node } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parse } from '../../sql/parser/index.js';
import type { Notice } from '../engine.js';
import type { PlannerContext } from '../../planner/index.js';
import { allStateTables, materializedViewColumns, planStream, sourceRelationIds, type PlannedStream } from '../../planner/stream/index.js';
import type { EngineCore } from '../engine-core.js';
import { CatalogDraft } from '../catalog.js';
import { expandViews } from '../view-expansion.js';
import { referencedRelationIds } from '../ddl/create-objects.js';
import { creationSchema, stringValue, viewQueryText } from '../ddl/sql-text.js';
import type { DdlContext } from '../ddl/ddl-context.js';
import { StoreTableAccess } from '../table-access.js';
import { withSign, type ChangeBatch } from './change-batch.js';
import type { Dataflow } from './dataflow.js';

export interface CreateViewInput {
  readonly core: EngineCore;
  readonly body: CreateTableAsStmt;
  readonly ddl: DdlContext;
  readonly planner: PlannerContext;
  /**
   * CREATE SINK ... AS query (executor/sink/create-sink.ts): the dataflow's rows belong to a
   * relation of kind 'sink' with these connector fields and this query text as its definition.
   */
  readonly sink?: Pick<RelationDef, 'options' | 'format' | 'encode'> & { readonly definition: string };
}

export interface CreateViewOutcome {
  readonly commandTag: string;
  readonly notices: Notice[];
}

function planView(core: EngineCore, query: Node, text: string, planner: PlannerContext, searchPath: readonly string[], relationId: number, name: string, allocate: () => number): PlannedStream {
  const expanded = expandViews({ node: query, text, location: 0 }, core.catalog, searchPath);
  return planStream(expanded.node as Node, planner, { relationId, name, allocateStateTableId: allocate });
}

/** Runs CREATE MATERIALIZED VIEW; call inside the engine's write lock. */
export function createMaterializedView(input: CreateViewInput): CreateViewOutcome {
  const { core, body, ddl } = input;
  const target = body.into?.rel ?? {};
  const name = target.relname ?? '';
  const schema = creationSchema(ddl, target);
  const sink = input.sink;
  const commandTag = sink === undefined ? 'CREATE_MATERIALIZED_VIEW' : 'CREATE SINK';
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
  const planned = planView(core, body.query!, queryText, input.planner, searchPath, relationId, name, () => draft.allocateId());
  const aliases = (body.into?.colNames ?? []).map(stringValue);
  if (aliases.length > planned.columns.length) throw new SqlError(SqlState.syntaxError, 'too many column names were specified');
  const columns = materializedViewColumns(planned.columns.map((column, index) => ({ name: aliases[index] ?? column.name, type: column.type })));
  const seen = new Set<string>();
  for (const column of columns) {
    if (seen.has(column.name)) throw new SqlError(SqlState.duplicateColumn, `column "${column.name}" specified more than once`);
    seen.add(column.name);
  }
  const relation: RelationDef = {
    id: relationId,
    kind: sink === undefined ? 'materialized_view' : 'sink',
    schema,
    name,
    columns,
    primaryKey: columns.map((_, index) => index),
    definition: queryText,
    dependsOn: referencedRelationIds(body.query!, ddl),
    stream: { stateTableIds: allStateTables(planned.stream).map((table) => table.tableId).filter((id) => id !== relationId).sort((a, b) => a - b), searchPath },
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(sink === undefined ? {} : { options: sink.options, format: sink.format, encode: sink.encode }),
  };
  draft.putRelation(relation);
  const next = draft.finish();
  const dataflow = core.streams.build(relationId, planned.stream, retentionMs);
  try {
    backfill(core, dataflow, planned);
    core.catalog.stage(core.store, next);
    core.commit();
  } catch (error) {
    core.store.abort();
    throw error;
  }
  core.catalog.install(next);
  core.streams.install(dataflow);
  return { commandTag, notices: [] };
}

/** The view's first contents: its operators' initial output, then its inputs' rows at one epoch. */
function backfill(core: EngineCore, dataflow: Dataflow, planned: PlannedStream): void {
  dataflow.initialize();
  const access = new StoreTableAccess(core.store, { systemRows: () => [] }, core.rowIds, core.store.committedEpoch);
  const snapshot = new Map<number, ChangeBatch>();
  for (const relationId of sourceRelationIds(planned.stream)) {
    const source = core.catalog.relationById(relationId)!;
    const rows: Row[] = [...access.scan(source, {})];
    if (rows.length > 0) snapshot.set(relationId, withSign(rows, 1));
  }
  dataflow.pushAll(snapshot);
}

/** Rebuilds every materialized view's dataflow from the catalog (at start), without recomputing. */
export function restoreDataflows(core: EngineCore, plannerContext: (searchPath: readonly string[]) => PlannerContext): void {
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
    });
    core.streams.install(core.streams.build(view.id, planned.stream));
  }
}
