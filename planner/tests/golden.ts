// The EXPLAIN golden harness shared by planner/tests/explain.test.ts (batch stages) and
// planner/stream/tests/explain-stream.test.ts (streaming plans): the test catalog (four tables,
// and the secondary indexes the batch goldens use), reading a cases file of `;`-separated
// statements, and comparing text with a golden file (`UPDATE=1` rewrites the file instead).

import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { type as scalar } from '../../sql/types.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { CatalogReader } from '../catalog-reader.js';

function table(id: number, name: string, columns: [string, ReturnType<typeof scalar>][], key: string[]): RelationDef {
  const defs = columns.map(([column, type]) => ({ name: column, type, nullable: !key.includes(column), hidden: false }));
  let primaryKey = key.map((k) => defs.findIndex((c) => c.name === k));
  if (primaryKey.length === 0) {
    defs.push({ name: '_row_id', type: scalar('int8'), nullable: false, hidden: true });
    primaryKey = [defs.length - 1];
  }
  return { id, kind: 'table', schema: 'public', name, columns: defs, primaryKey, dependsOn: [] };
}

const relations = [
  table(1, 'orders', [['id', scalar('int4')], ['customer', scalar('int4')], ['amount', scalar('numeric')], ['placed', scalar('date')]], ['id']),
  table(2, 'customers', [['id', scalar('int4')], ['name', scalar('text')], ['region', scalar('int4')]], ['id']),
  table(3, 'regions', [['id', scalar('int4')], ['name', scalar('text')]], ['id']),
  table(4, 'events', [['kind', scalar('text')], ['at', scalar('timestamptz')]], []),
];

/** Secondary indexes (rule index_lookup): on a non-key column, a two-column one, one on a row-id table. */
function index(id: number, name: string, on: RelationDef, columns: string[]): RelationDef {
  const positions = columns.map((c) => on.columns.findIndex((d) => d.name === c));
  return {
    id, kind: 'index', schema: 'public', name,
    columns: positions.map((p) => on.columns[p]!), primaryKey: positions.map((_, i) => i), dependsOn: [],
    indexOn: { relationId: on.id, columns: positions, stored: true },
  };
}

const indexes = [
  index(5, 'customers_region_idx', relations[1]!, ['region']),
  index(6, 'orders_customer_placed_idx', relations[0]!, ['customer', 'placed']),
  index(7, 'events_kind_idx', relations[3]!, ['kind']),
];

/** orders, customers, regions, events (no key: a hidden row id); with `indexes`, their three secondary indexes. */
export function goldenCatalog(options: { readonly indexes: boolean }): CatalogReader {
  return {
    resolveRelation: (schema, name) => relations.find((r) => r.name === name && (schema === undefined || schema === r.schema)),
    relationById: (id) => relations.find((r) => r.id === id),
    schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
    ...(options.indexes ? { indexesOf: (id: number) => indexes.filter((i) => i.indexOn!.relationId === id) } : {}),
  };
}

/** The statements of a cases file: `--` comment lines and blank lines dropped, split on `;`. */
export function readCases(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('--') && line.trim() !== '')
    .join('\n')
    .split(';')
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}

/** Expects `text` to equal the golden file; with UPDATE=1 writes it there instead. */
export function expectGolden(path: string, text: string): void {
  if (process.env['UPDATE'] === '1') writeFileSync(path, text);
  expect(text).toBe(readFileSync(path, 'utf8'));
}
