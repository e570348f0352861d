// A streaming plan sent to a parallel fragment's workers (planner/stream/plan-transfer.ts): what
// the binder makes per type (an array subscript) crosses by reference and resolves on the other
// side to the same function, and the copy evaluates as the original does. Nexmark q21
// (bench/nexmark/q21.sql), whose `(regexp_match(...))[2]` once kept it serial at parallelism 2.

import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar, type DataType } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row, Value } from '../../../sql/value.js';
import { DEFAULT_EVAL_CONTEXT } from '../../../sql/eval-context.js';
import type { Expression } from '../../expression.js';
import type { CatalogReader } from '../../catalog-reader.js';
import { planStream } from '../index.js';
import { fromTransfer, toTransfer } from '../plan-transfer.js';
import { sourceFragmentWorkers, sourceSerialReason } from '../parallel-source.js';
import { explainStreamLines, explainStreamPlan } from '../explain-stream.js';
import { compile, type EvalRuntime } from '../../../executor/expr/expression.js';

const text = scalar('text');
const int8 = scalar('int8');
const column = (name: string, type: DataType, hidden = false) => ({ name, type, nullable: !hidden, hidden });

// Nexmark's bid as a replayed generator source (columns in the generator's order).
const bid: RelationDef = {
  id: 100, kind: 'source', schema: 'public', name: 'bid', replayed: true, options: { connector: 'nexmark', 'nexmark.table.type': 'bid' },
  columns: [column('auction', int8), column('bidder', int8), column('price', int8), column('channel', text), column('url', text), column('date_time', scalar('timestamp')), column('extra', text), column('_row_id', int8, true)],
  primaryKey: [7], dependsOn: [],
} as RelationDef;
const catalog: CatalogReader = {
  resolveRelation: (_schema, name) => (name === 'bid' ? bid : undefined),
  relationById: (id) => (id === bid.id ? bid : undefined),
  schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
};

const Q21 = `
SELECT auction, bidder, price, channel,
  CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1'
       WHEN lower(channel) = 'facebook' THEN '2' WHEN lower(channel) = 'baidu' THEN '3'
       ELSE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] END AS channel_id
FROM bid
WHERE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] IS NOT NULL OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')`;

const runtime: EvalRuntime = { parameters: [], evalContext: DEFAULT_EVAL_CONTEXT, outer: [], subqueryCache: new Map(), runPlan: () => [] };

/** Every expression of a chain of filters and projections: the filter's predicate, the projection's outputs. */
function expressions(plan: { kind: string; input?: unknown; predicate?: Expression; expressions?: readonly Expression[] }): Expression[] {
  const out: Expression[] = [];
  for (let node: typeof plan | undefined = plan; node !== undefined; node = node.input as typeof plan | undefined) {
    if (node.predicate !== undefined) out.push(node.predicate);
    if (node.expressions !== undefined) out.push(...node.expressions);
  }
  return out;
}

function calls(value: unknown, name: string): number {
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + calls(item, name), 0);
  const record = value as Record<string, unknown>;
  let count = record.kind === 'Call' && (record.fn as { name?: string }).name === name ? 1 : 0;
  for (const [key, field] of Object.entries(record)) if (key !== 'fn') count += calls(field, name);
  return count;
}

beforeAll(async () => {
  await initParser();
});

describe('plan transfer', () => {
  it('sends an array subscript to the workers, and the copy evaluates as the original', () => {
    const plan = planStream(parse(Q21)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'q21', allocateStateTableId: () => 1000 }).stream;
    expect(calls(plan, 'array_subscript')).toBe(2);
    expect(sourceSerialReason(plan)).toBeUndefined();
    const transferred = toTransfer(plan);
    expect(transferred).toBeDefined();
    // What postMessage does to it.
    const received = fromTransfer<typeof plan>(structuredClone(transferred));
    expect(calls(received, 'array_subscript')).toBe(2);
    const before = expressions(plan as never).map((expression) => compile(expression));
    const after = expressions(received as never).map((expression) => compile(expression));
    expect(after.length).toBe(before.length);
    expect(after.length).toBeGreaterThan(1);
    const rows: Row[] = [
      [1n, 2n, 3n, 'Apple', 'https://x/item?channel_id=abc', 0, '', 1n],
      [1n, 2n, 3n, 'other', 'https://x/item?a=1&channel_id=xyz&b=2', 0, '', 2n],
      [1n, 2n, 3n, 'other', 'https://x/item?a=1', 0, '', 3n],
      [1n, 2n, 3n, 'Baidu', 'channel_id=', 0, '', 4n],
      [1n, 2n, 3n, null, null, 0, '', 5n],
    ] as unknown as Row[];
    const seen: Value[] = [];
    for (const row of rows) {
      for (let i = 0; i < before.length; i++) {
        const expected = before[i]!(row, runtime);
        // A projection above the filter reads the filter's output, which is its input row.
        expect(after[i]!(row, runtime)).toEqual(expected);
        seen.push(expected);
      }
    }
    // The subscript did reach into the match: the channel id out of the URL.
    expect(seen).toContain('xyz');
  });

  it('gives a view that stores its rows min(N, cores - 1) workers, none below 2; a direct sink N; EXPLAIN agrees', () => {
    // [parallelism, cores, stores rows] -> workers (1: as at parallelism 1).
    const cases: [number, number, boolean, number][] = [
      [1, 8, true, 1],
      [2, 2, true, 1],
      [2, 3, true, 2],
      [4, 4, true, 3],
      [4, 2, true, 1],
      [8, 64, true, 8],
      [2, 1, false, 2],
      [2, 2, false, 2],
      [4, 2, false, 4],
    ];
    for (const [parallelism, cores, storesRows, workers] of cases) expect(sourceFragmentWorkers(parallelism, cores, storesRows), `${parallelism} on ${cores} cores`).toBe(workers);
    const plan = planStream(parse(Q21)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'q21', allocateStateTableId: () => 1000 }).stream;
    const atOne = explainStreamPlan(plan, 1);
    expect(atOne.join('\n')).not.toContain('StreamSourceFragment');
    expect(explainStreamPlan(plan, 2, false, 2)).toEqual(atOne);
    expect(explainStreamPlan(plan, 4, false, 4).join('\n')).toContain('split across 3 workers');
    expect(explainStreamPlan(plan, 2, false, 8).join('\n')).toContain('split across 2 workers');
    // A direct sink AS the query (stores no rows): N workers whatever the cores.
    expect(explainStreamLines(plan, 2, false, true, 2, false).map((line) => line.text).join('\n')).toContain('split across 2 workers');
  });
});
