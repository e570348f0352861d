// The system relations of the engine: system/'s own, and those the layers above system/ provide
// from their own state, registered here: the connectors' oxbow_catalog.source_errors,
// source_partitions, sink_status and sink_errors, metrics' oxbow_catalog status relations, pg_stat_activity and pg_stat_ssl. A session's
// SystemContext carries what they read (the source status, the status API).

import { sinkRelationTables } from '../connectors/sink-relations.js';
import { sourceRelationTables, type SourceSystemContext } from '../connectors/source-relations.js';
import { pgStatSslTable } from '../metrics/ssl-relation.js';
import { operatorViewTables, type StatusSystemContext } from '../metrics/status-relations.js';
import { SystemRegistry } from '../system/system-relations.js';

export const systemRegistry = new SystemRegistry([...sourceRelationTables, ...sinkRelationTables, ...operatorViewTables, pgStatSslTable]);

/** What a statement's system relations read. */
export type EngineSystemContext = SourceSystemContext & StatusSystemContext;
