// The operator's view as system relations, from the engine's status API (executor/metrics/status.ts)
// through the statement's SystemContext:
//   oxbow_catalog.objects      every table, source, view, materialized view, sink and index
//   oxbow_catalog.dataflow     per materialized view, its streaming operators with their counters
//   oxbow_catalog.state_size   per state table (a table's rows, each operator's state): bytes, keys
//   oxbow_catalog.epochs       the open epoch, the last committed (durable) one, the last sealed one
//                              and how many sealed epochs are still being written, barrier and
//                              commit latency
//   oxbow_catalog.sessions     every open session (pid, user, application, client, state, query)
//   oxbow_catalog.queries      the sessions running a statement, with how long it has run
//   oxbow_catalog.memory       where the process's memory is: one row per component (RSS, V8's
//                              heap, the state caches with their limits, RocksDB's block cache,
//                              memtables and table readers, the C heap), bytes and limit, then
//                              one worker_heap row per worker thread (its view, operator, index,
//                              heap and cache bytes)
//   oxbow_catalog.dataflow_workers  per worker of a parallel dataflow: its view and operator, the
//                              pooled thread it runs on, heap, caches, evictions, batches handed
//                              over, the main thread's wait
//   pg_catalog.pg_stat_activity  PostgreSQL's view of the same sessions
// Per-table time-travel windows are in oxbow_catalog.time_travel (time-travel-relation.ts).

import { epochToMillis } from '../../sql/epoch.js';
import type { Row, SqlArray, Value } from '../../sql/value.js';
import type { SessionActivity } from './engine-metrics.js';
import type { SystemTable } from '../system/pg-catalog.js';
import type { SystemContext } from '../system/system-context.js';
import { WORKER_HEAP_DESCRIPTION, type EngineStatus } from './status.js';
import { systemRelation } from '../system/system-columns.js';
import { currentRole, DATABASE_OID, OWNER_OID } from '../system/system-context.js';
import { isSuperuser, privilegeRoles } from '../catalog/privileges.js';

/** What the status relations read besides the catalog: the engine's status API. */
export interface StatusSystemContext extends SystemContext {
  readonly status?: EngineStatus;
}

/** Below 16384 (system ids), clear of the other oxbow_catalog relations (132xx). */
export const OBJECTS_RELATION_ID = 13300;
export const DATAFLOW_RELATION_ID = 13301;
export const STATE_SIZE_RELATION_ID = 13302;
export const EPOCHS_RELATION_ID = 13303;
export const SESSIONS_RELATION_ID = 13304;
export const QUERIES_RELATION_ID = 13305;
export const PG_STAT_ACTIVITY_RELATION_ID = 13306;
export const MEMORY_RELATION_ID = 13307;
export const DATAFLOW_WORKERS_RELATION_ID = 13309;

const MICROS_PER_MILLI = 1000;

function array(elements: Value[]): SqlArray {
  return { kind: 'array', elements };
}

function micros(millis: number | null): number | null {
  return millis === null ? null : millis * MICROS_PER_MILLI;
}

export const objectsTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(OBJECTS_RELATION_ID, 'oxbow_catalog', 'objects', ['id:int4', 'schema_name:text', 'name:text', 'kind:text', 'definition:text', 'depends_on:int4[]', 'created_at:timestamptz']),
  rows: (context) =>
    (context.status?.objects() ?? []).map((object): Row => [object.id, object.schema, object.name, object.kind, object.definition, array([...object.dependsOn]), micros(object.createdAtMillis)]),
};

export const dataflowTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(DATAFLOW_RELATION_ID, 'oxbow_catalog', 'dataflow', [
    'view_id:int4',
    'view_schema:text',
    'view_name:text',
    'operator_id:int4',
    'parent_id:int4',
    'kind:text',
    'stateful:bool',
    'state_table_ids:int4[]',
    'rows_in:int8',
    'rows_out:int8',
    'batches:int8',
    'busy_ms:float8',
  ]),
  rows: (context) => {
    const rows: Row[] = [];
    for (const dataflow of context.status?.dataflows() ?? []) {
      for (const operator of dataflow.operators) {
        rows.push([
          dataflow.viewId,
          dataflow.schema,
          dataflow.name,
          operator.operatorId,
          operator.parentId,
          operator.kind,
          operator.stateful,
          array([...operator.stateTableIds]),
          BigInt(operator.rowsIn),
          BigInt(operator.rowsOut),
          BigInt(operator.batches),
          operator.seconds * 1000,
        ]);
      }
    }
    return rows;
  },
};

export const stateSizeTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(STATE_SIZE_RELATION_ID, 'oxbow_catalog', 'state_size', [
    'table_id:int4',
    'object_id:int4',
    'schema_name:text',
    'object_name:text',
    'object_kind:text',
    'operator_id:int4',
    'operator_kind:text',
    'purpose:text',
    'bytes:int8',
    'keys:int8',
    'keyed_by_vnode:bool',
  ]),
  rows: (context) =>
    (context.status?.stateTables() ?? []).map((table): Row => [
      table.tableId,
      table.objectId,
      table.schema,
      table.name,
      table.kind,
      table.operatorId,
      table.operatorKind,
      table.purpose,
      BigInt(table.bytes),
      BigInt(table.keys),
      table.keyedByVnode,
    ]),
};

export const epochsTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(EPOCHS_RELATION_ID, 'oxbow_catalog', 'epochs', [
    'open_epoch:int8',
    'committed_epoch:int8',
    'committed_at:timestamptz',
    'epochs_committed:int8',
    'barrier_mean_ms:float8',
    'commit_mean_ms:float8',
    'sealed_epoch:int8',
    'sealed_at:timestamptz',
    'epochs_in_flight:int4',
    'epochs_sealed:int8',
  ]),
  rows: (context) => {
    const status = context.status;
    if (status === undefined) return [];
    const epochs = status.epochs();
    const barrier = status.metrics.barrierLatency.snapshot();
    const commit = status.metrics.commitLatency.snapshot();
    const mean = (sum: number, count: number): number | null => (count === 0 ? null : (sum / count) * 1000);
    return [
      [
        epochs.openEpoch,
        epochs.committedEpoch,
        epochs.committedEpoch === 0n ? null : epochToMillis(epochs.committedEpoch) * MICROS_PER_MILLI,
        BigInt(epochs.epochsCommitted),
        mean(barrier.sumSeconds, barrier.count),
        mean(commit.sumSeconds, commit.count),
        epochs.sealedEpoch,
        epochs.sealedEpoch === 0n ? null : epochs.sealedAtMillis * MICROS_PER_MILLI,
        epochs.epochsInFlight,
        BigInt(epochs.epochsSealed),
      ],
    ];
  },
};

function bytes(value: number | null): bigint | null {
  return value === null ? null : BigInt(Math.round(value));
}

export const memoryTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(MEMORY_RELATION_ID, 'oxbow_catalog', 'memory', [
    'component:text',
    'bytes:int8',
    'limit_bytes:int8',
    'description:text',
    'view_name:text',
    'operator_id:int4',
    'worker:int4',
    'cache_bytes:int8',
  ]),
  rows: (context) => {
    const status = context.status;
    if (status === undefined) return [];
    const rows = status.memory().map((part): Row => {
      // The workers' sum carries their caches' sum, as each worker's row carries its own.
      const caches = part.component === 'worker_heaps' ? status.workers().reduce((sum, worker) => sum + worker.rowCacheBytes + worker.groupCacheBytes, 0) : null;
      return [part.component, bytes(part.bytes), bytes(part.limitBytes), part.description, null, null, null, bytes(caches)];
    });
    for (const worker of status.workers()) {
      rows.push([
        'worker_heap',
        bytes(worker.heapUsedBytes),
        bytes(worker.oldGenerationLimitBytes),
        WORKER_HEAP_DESCRIPTION,
        `${worker.schema}.${worker.name}`,
        worker.operatorId,
        worker.worker,
        bytes(worker.rowCacheBytes + worker.groupCacheBytes),
      ]);
    }
    return rows;
  },
};

export const dataflowWorkersTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(DATAFLOW_WORKERS_RELATION_ID, 'oxbow_catalog', 'dataflow_workers', [
    'view_id:int4',
    'view_schema:text',
    'view_name:text',
    'operator_id:int4',
    'kind:text',
    'worker:int4',
    'thread_id:int4',
    'heap_used_bytes:int8',
    'heap_total_bytes:int8',
    'live_heap_bytes:int8',
    'old_generation_limit_bytes:int8',
    'full_collections:int8',
    'row_cache_bytes:int8',
    'row_cache_limit_bytes:int8',
    'group_cache_bytes:int8',
    'group_cache_limit_bytes:int8',
    'cache_evicted_bytes:int8',
    'batches:int8',
    'waited_ms:float8',
  ]),
  rows: (context) =>
    (context.status?.workers() ?? []).map((worker): Row => [
      worker.viewId,
      worker.schema,
      worker.name,
      worker.operatorId,
      worker.kind,
      worker.worker,
      worker.threadId,
      bytes(worker.heapUsedBytes),
      bytes(worker.heapTotalBytes),
      bytes(worker.liveHeapBytes),
      bytes(worker.oldGenerationLimitBytes),
      BigInt(worker.fullCollections),
      bytes(worker.rowCacheBytes),
      bytes(worker.rowCacheLimitBytes),
      bytes(worker.groupCacheBytes),
      bytes(worker.groupCacheLimitBytes),
      bytes(worker.evictedBytes),
      BigInt(worker.batches),
      worker.waitedMs,
    ]),
};

function sessionRow(session: SessionActivity): Row {
  return [
    session.pid,
    session.user,
    session.database,
    session.applicationName,
    session.clientAddress,
    session.clientPort,
    micros(session.backendStartMillis),
    session.state === '' ? null : session.state,
    session.query,
    micros(session.queryStartMillis),
    micros(session.stateChangeMillis),
  ];
}

/**
 * What the viewer may see of another role's session, as PostgreSQL 15: everything when it is a
 * superuser or has the privileges of the session's role, else its query is `<insufficient
 * privilege>` and its address, state and times are hidden (a CREATE ROLE ... PASSWORD stays private).
 */
function visible(context: StatusSystemContext, session: SessionActivity): SessionActivity {
  const viewer = currentRole(context);
  if (isSuperuser(context.catalog, viewer)) return session;
  const owner = context.catalog.role(session.user);
  if (owner !== undefined && privilegeRoles(context.catalog, viewer).has(owner.id)) return session;
  return { ...session, clientAddress: null, clientPort: null, state: '', query: '<insufficient privilege>', queryStartMillis: null };
}

function sessionsOf(context: StatusSystemContext): SessionActivity[] {
  return (context.status?.sessions() ?? []).map((session) => visible(context, session));
}

export const sessionsTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(SESSIONS_RELATION_ID, 'oxbow_catalog', 'sessions', [
    'pid:int4',
    'user_name:text',
    'database_name:text',
    'application_name:text',
    'client_addr:text',
    'client_port:int4',
    'backend_start:timestamptz',
    'state:text',
    'query:text',
    'query_start:timestamptz',
    'state_change:timestamptz',
  ]),
  rows: (context) => sessionsOf(context).map(sessionRow),
};

export const queriesTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(QUERIES_RELATION_ID, 'oxbow_catalog', 'queries', ['pid:int4', 'user_name:text', 'application_name:text', 'query:text', 'query_start:timestamptz', 'running_ms:float8']),
  rows: (context) => {
    const now = Date.now();
    return sessionsOf(context)
      .filter((session) => session.state === 'active')
      .map((session): Row => [session.pid, session.user, session.applicationName, session.query, micros(session.queryStartMillis), session.queryStartMillis === null ? null : now - session.queryStartMillis]);
  },
};

/** PostgreSQL 15's pg_stat_activity columns, for client sessions (backend_type 'client backend'). */
export const pgStatActivityTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(PG_STAT_ACTIVITY_RELATION_ID, 'pg_catalog', 'pg_stat_activity', [
    'datid:oid',
    'datname:name',
    'pid:int4',
    'leader_pid:int4',
    'usesysid:oid',
    'usename:name',
    'application_name:text',
    'client_addr:text',
    'client_hostname:text',
    'client_port:int4',
    'backend_start:timestamptz',
    'xact_start:timestamptz',
    'query_start:timestamptz',
    'state_change:timestamptz',
    'wait_event_type:text',
    'wait_event:text',
    'state:text',
    'backend_xid:text',
    'backend_xmin:text',
    'query_id:int8',
    'query:text',
    'backend_type:text',
  ]),
  rows: (context) =>
    sessionsOf(context).map((session): Row => [
      DATABASE_OID,
      session.database,
      session.pid,
      null,
      context.catalog.role(session.user)?.id ?? OWNER_OID,
      session.user,
      session.applicationName,
      session.clientAddress,
      null,
      session.clientAddress === null ? -1 : session.clientPort,
      micros(session.backendStartMillis),
      session.state === 'active' || session.state.startsWith('idle in transaction') ? micros(session.queryStartMillis) : null,
      micros(session.queryStartMillis),
      micros(session.stateChangeMillis),
      session.state === 'active' || session.state === '' ? null : 'Client',
      session.state === 'active' || session.state === '' ? null : 'ClientRead',
      session.state === '' ? null : session.state,
      null,
      null,
      null,
      session.query,
      'client backend',
    ]),
};

export const operatorViewTables: readonly SystemTable<StatusSystemContext>[] = [objectsTable, dataflowTable, stateSizeTable, epochsTable, sessionsTable, queriesTable, pgStatActivityTable, memoryTable, dataflowWorkersTable];
