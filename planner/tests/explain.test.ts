// Golden tests of the planner's stages: every query of explain-cases.sql printed as LOGICAL,
// OPTIMIZED and PHYSICAL plans, compared with explain.golden. The golden file is reviewed like
// code; `UPDATE=1 npx vitest run planner/tests/explain.test.ts` rewrites it.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../sql/parser/index.js';
import { type as scalar } from '../../sql/types.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { CatalogReader } from '../catalog-reader.js';
import { BinderContext } from '../binder/context.js';
import { planToStage } from '../stages.js';
import { explainPlan } from '../explain.js';
import { planStatement } from '../index.js';

const here = import.meta.dirname;

function table(id: number, name: string, columns: [string, ReturnType<typeof scalar>][], key: string[]): RelationDef {
  const defs = columns.map(([n, t]) => ({ name: n, type: t, nullable: !key.includes(n), hidden: false }));
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

export const catalog: CatalogReader = {
  resolveRelation: (schema, name) => relations.find((r) => r.name === name && (schema === undefined || schema === r.schema)),
  relationById: (id) => relations.find((r) => r.id === id),
  schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
  indexesOf: (id) => indexes.filter((i) => i.indexOn!.relationId === id),
};

function cases(): string[] {
  const text = readFileSync(join(here, 'explain-cases.sql'), 'utf8');
  return text
    .split('\n')
    .filter((line) => !line.startsWith('--') && line.trim() !== '')
    .join('\n')
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function render(sql: string): string {
  const [statement] = parse(sql);
  const out = [`== ${sql}`];
  for (const stage of ['logical', 'optimized', 'physical'] as const) {
    const bound = planToStage(statement!.node as never, new BinderContext({ catalog, searchPath: ['public'], parameterTypes: [] }), stage);
    out.push(`-- ${stage}`, ...explainPlan(bound.plan));
  }
  return out.join('\n');
}

beforeAll(async () => {
  await initParser();
});

describe('EXPLAIN goldens', () => {
  it('matches explain.golden at every stage', () => {
    const actual = `${cases().map(render).join('\n\n')}\n`;
    const goldenPath = join(here, 'explain.golden');
    if (process.env.UPDATE === '1') writeFileSync(goldenPath, actual);
    expect(actual).toBe(readFileSync(goldenPath, 'utf8'));
  });

  it('EXPLAIN statements return one text row per line, and the stage options choose the stage', () => {
    const [statement] = parse('explain (optimized) select id from orders where amount > 10');
    const planned = planStatement(statement!, { catalog, searchPath: ['public'], parameterTypes: [] });
    expect(planned.kind).toBe('explain');
    expect(planned.columns).toEqual([{ name: 'QUERY PLAN', type: scalar('text'), tableOid: 0, columnNumber: 0 }]);
    const rows = planned.plan.kind === 'Values' ? planned.plan.rows.map((r) => (r[0] as { value: string }).value) : [];
    const [query] = parse('select id from orders where amount > 10');
    const expected = explainPlan(planToStage(query!.node as never, new BinderContext({ catalog, searchPath: ['public'], parameterTypes: [] }), 'optimized').plan);
    expect(rows).toEqual(expected);
  });

  it('plans are deterministic: the same statement prints the same text twice', () => {
    for (const sql of cases()) expect(render(sql)).toBe(render(sql));
  });
});
