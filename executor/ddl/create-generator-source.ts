// The DDL side of the generator connectors: CREATE SOURCE / CREATE TABLE ... WITH (connector =
// 'nexmark' | 'datagen'). The relation is built like a Kafka source's (create-source.ts makes the
// table); this checks the options against its columns (22023 for a bad option, 42703 / 42804 /
// 0A000 for a column the generator cannot fill) and stores them. FORMAT and ENCODE other than
// PLAIN JSON and INCLUDE do not apply to generated rows (0A000).

import type { RelationDef } from '../../sql/catalog.js';
import type { ConnectorSpec } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { CatalogDraft } from '../catalog/catalog.js';
import type { DdlContext, DdlOutcome } from './ddl-context.js';
import { ROW_ID_COLUMN } from './create-table.js';
import { generatorProducer } from '../connectors/generators/generator-reader.js';

export function withGenerator(outcome: DdlOutcome, connector: ConnectorSpec, commandTag: string, context: DdlContext, extra: Partial<RelationDef> = {}): DdlOutcome {
  const name = (connector.options['connector'] ?? '').toLowerCase();
  const format = connector.format?.toLowerCase();
  const encode = connector.encode?.toLowerCase();
  if ((format !== undefined && format !== 'plain') || (encode !== undefined && encode !== 'json')) {
    throw new SqlError(SqlState.featureNotSupported, `FORMAT ${format?.toUpperCase() ?? 'PLAIN'} ENCODE ${encode?.toUpperCase() ?? 'JSON'} does not apply to connector "${name}"`, {
      hint: 'A generator makes rows of the declared columns: leave FORMAT and ENCODE out.',
    });
  }
  if ((connector.include ?? []).length > 0) throw new SqlError(SqlState.featureNotSupported, `INCLUDE is not supported for connector "${name}"`);
  if (outcome.catalog === undefined) return { ...outcome, commandTag };
  const before = new Set(context.catalog.relations().map((relation) => relation.id));
  const table = outcome.catalog.relations().find((relation) => relation.kind === 'table' && !before.has(relation.id))!;
  const producer = generatorProducer(connector.options, table.columns);
  // A deterministic generator's append-only source stores no rows: only its position per split,
  // and reads replay the events below it (executor/connectors/source-replay.ts). A connector table
  // (DML may write it) or a source with a primary key (upserts) stores its rows.
  const rowId = table.columns.findIndex((column) => column.name === ROW_ID_COLUMN && column.hidden === true);
  const replayed = extra.kind === 'source' && producer.deterministic && rowId >= 0 && table.primaryKey.length === 1 && table.primaryKey[0] === rowId;
  const draft = new CatalogDraft(outcome.catalog);
  draft.putRelation({ ...table, ...extra, options: { ...connector.options }, ...(replayed ? { replayed: true } : {}) });
  return { ...outcome, catalog: draft.finish(), commandTag };
}
