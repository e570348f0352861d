// Golden test of the incrementalization pass: EXPLAIN CREATE MATERIALIZED VIEW of every case in
// explain-stream-cases.sql (the streaming plan, linear / stateful, state tables), compared with
// explain-stream.golden. `UPDATE=1 npx vitest run planner/stream/tests/explain-stream.test.ts`
// rewrites the golden file; review its diff like code.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { planStatement } from '../../index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { CatalogReader } from '../../catalog-reader.js';

const here = import.meta.dirname;

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

const catalog: CatalogReader = {
  resolveRelation: (schema, name) => relations.find((r) => r.name === name && (schema === undefined || schema === r.schema)),
  relationById: (id) => relations.find((r) => r.id === id),
  schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
};

function cases(): string[] {
  return readFileSync(join(here, 'explain-stream-cases.sql'), 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('--') && line.trim() !== '')
    .join('\n')
    .split(';')
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}

function render(sql: string): string {
  const [statement] = parse(`explain ${sql}`);
  const planned = planStatement(statement!, { catalog, searchPath: ['public'], parameterTypes: [] });
  const lines = planned.plan.kind === 'Values' ? planned.plan.rows.map((row) => String((row[0] as { value: unknown }).value)) : [];
  return [`== ${sql}`, ...lines].join('\n');
}

describe('EXPLAIN CREATE MATERIALIZED VIEW goldens', () => {
  beforeAll(async () => {
    await initParser();
  });

  it('matches explain-stream.golden', () => {
    const text = `${cases().map(render).join('\n\n')}\n`;
    const golden = join(here, 'explain-stream.golden');
    if (process.env.UPDATE === '1') writeFileSync(golden, text);
    expect(text).toBe(readFileSync(golden, 'utf8'));
  });
});
