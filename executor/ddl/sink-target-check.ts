// The target side of CREATE SINK, run before the DDL commits (inside the write lock, bounded by
// the connector's connect and query deadlines): a PostgreSQL sink's table is checked, or made
// with create_table_if_not_exists (connectors/postgres/postgres-target.ts), and an upsert sink
// needs a key of visible columns (42P10 otherwise). Other connectors need nothing here.

import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { isPostgresSink, postgresSinkOptions } from '../connectors/postgres/postgres-options.js';
import { prepareTarget } from '../connectors/postgres/postgres-target.js';
import { sinkKeyPositions } from '../connectors/sink-key.js';

/** `sink` delivers the rows of `rows` (itself for a sink AS query). */
export async function prepareSinkTarget(sink: RelationDef, rows: RelationDef): Promise<void> {
  if (!isPostgresSink(sink.options)) return;
  const options = postgresSinkOptions(sink.options ?? {});
  const columns = rows.columns.filter((column) => !column.hidden).map((column) => ({ name: column.name, type: column.type }));
  let keyColumns: string[] = [];
  if (options.type === 'upsert') {
    const key = sinkKeyPositions(sink.options, rows.name, rows.columns, rows.primaryKey);
    if (key.length === 0 || key.some((position) => rows.columns[position]!.hidden === true)) {
      throw new SqlError(SqlState.invalidColumnReference, `an upsert sink into PostgreSQL needs a key, and the rows of "${rows.name}" have none`, {
        hint: "Name the key columns with primary_key = 'a,b', or use type = 'append-only'.",
      });
    }
    keyColumns = key.map((position) => rows.columns[position]!.name);
  }
  await prepareTarget(options, columns, keyColumns);
}

/** The sinks `next` adds to `current` (CREATE SINK ... FROM), each checked against its target. */
export async function prepareCreatedSinkTargets(current: CatalogSnapshot, next: CatalogSnapshot): Promise<void> {
  for (const relation of next.relations()) {
    if (relation.kind !== 'sink' || relation.stream !== undefined || current.relationById(relation.id) !== undefined) continue;
    const rows = next.relationById(relation.dependsOn[0]!);
    if (rows !== undefined) await prepareSinkTarget(relation, rows);
  }
}
