// Golden tests of the planner's stages: every query of explain-cases.sql printed as LOGICAL,
// OPTIMIZED and PHYSICAL plans, compared with explain.golden. The golden file is reviewed like
// code; `UPDATE=1 npx vitest run planner/tests/explain.test.ts` rewrites it.

import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../sql/parser/index.js';
import { type as scalar } from '../../sql/types.js';
import { BinderContext } from '../binder/context.js';
import { planToStage } from '../stages.js';
import { explainPlan } from '../explain.js';
import { planStatement } from '../index.js';
import { expectGolden, goldenCatalog, readCases } from './golden.js';

const here = import.meta.dirname;

export const catalog = goldenCatalog({ indexes: true });

const cases = (): string[] => readCases(join(here, 'explain-cases.sql'));

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
    expectGolden(join(here, 'explain.golden'), `${cases().map(render).join('\n\n')}\n`);
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
