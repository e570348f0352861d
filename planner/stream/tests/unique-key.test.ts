// The key a materialized view is stored by (planner/stream/unique-key.ts, incrementalize.ts
// `viewStorageKey`): for each rule of the derivation a view whose key follows from it, and views
// where no key is known and the `row ++ duplicate number` layout with row counts stays. Expected
// keys are worked out by hand from the queries (which output columns no two rows can share).

import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar, type DataType } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { CatalogReader } from '../../catalog-reader.js';
import { planStream } from '../index.js';
import { DUPLICATE_COLUMN } from '../incrementalize.js';

const int4 = scalar('int4');
const int8 = scalar('int8');
const text = scalar('text');
const column = (name: string, type: DataType, hidden = false) => ({ name, type, nullable: !hidden, hidden });

const relations: RelationDef[] = [
  { id: 100, kind: 'table', schema: 'public', name: 't', columns: [column('id', int4), column('g', int4), column('v', int4)], primaryKey: [0], dependsOn: [] },
  { id: 101, kind: 'table', schema: 'public', name: 'u', columns: [column('id', int4), column('g', int4), column('w', int4)], primaryKey: [0], dependsOn: [] },
  // A table without a primary key: keyed by its hidden row id, which no view reads.
  { id: 102, kind: 'table', schema: 'public', name: 'n', columns: [column('a', int4), column('b', text), column('_row_id', int8, true)], primaryKey: [2], dependsOn: [] },
  // An append-only source (no primary key: the hidden row id).
  { id: 103, kind: 'source', schema: 'public', name: 's', columns: [column('auction', int8), column('price', int8), column('date_time', scalar('timestamp')), column('_row_id', int8, true)], primaryKey: [3], dependsOn: [] },
  // A view stored by its first column, and one stored by its whole row and duplicate number.
  { id: 104, kind: 'materialized_view', schema: 'public', name: 'keyed', columns: [column('g', int4), column('n', int8), column(DUPLICATE_COLUMN, int8, true)], primaryKey: [0], dependsOn: [] },
  { id: 105, kind: 'materialized_view', schema: 'public', name: 'counted', columns: [column('g', int4), column('n', int8), column(DUPLICATE_COLUMN, int8, true)], primaryKey: [0, 1, 2], dependsOn: [] },
];
const catalog: CatalogReader = {
  resolveRelation: (_schema, name) => relations.find((relation) => relation.name === name),
  relationById: (id) => relations.find((relation) => relation.id === id),
  schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
};

function planned(sql: string, options: { planVersion?: number; storedKey?: readonly number[] } = {}) {
  let next = 1000;
  const stream = planStream(parse(sql)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'v', allocateStateTableId: () => next++, ...options }).stream;
  if (stream.kind !== 'StreamMaterialize') throw new Error('expected StreamMaterialize at the root');
  return stream;
}

/** The view's storage key as column names (the hidden column by its name), or 'row, duplicate number'. */
function storedBy(sql: string, options: { planVersion?: number; storedKey?: readonly number[] } = {}): string {
  const stream = planned(sql, options);
  const names = [...stream.columns.map((c) => c.name), DUPLICATE_COLUMN];
  if (stream.key === undefined) {
    // The counted layout: the relation table by the whole row, and a row-count table.
    expect(stream.stateTables.map((table) => table.purpose)).toEqual(['view rows', 'row counts']);
    expect(stream.stateTables[0]!.primaryKey).toEqual(names.map((_, index) => index));
    return 'row, duplicate number';
  }
  // Stored by its key: one state table, its primary key the key; numbered by row (plan version 8): the next number beside it.
  expect(stream.stateTables.map((table) => table.purpose)).toEqual(stream.numbered === true ? ['view rows', 'next row number'] : ['view rows']);
  if (stream.numbered === true) return 'row number';
  expect(stream.stateTables[0]!.primaryKey).toEqual(stream.key);
  return stream.key.map((index) => names[index]).join(', ');
}

beforeAll(async () => {
  await initParser();
});

describe('the key a view is stored by', () => {
  it('an aggregate: its group keys when all are output; no group keys: one row', () => {
    expect(storedBy('select g, count(*), sum(v) from t group by g')).toBe('g');
    expect(storedBy('select sum(v) as s, g from t group by g')).toBe('g');
    expect(storedBy('select g, v, count(*) from t group by g, v')).toBe('g, v');
    expect(storedBy('select g, count(*) from t group by g having count(*) > 1')).toBe('g');
    expect(storedBy("select g, string_agg(v::text, ',') from t group by g")).toBe('g');
    expect(storedBy('select count(*), max(v) from t')).toBe(DUPLICATE_COLUMN);
    // A group key not in the output: counts may repeat.
    expect(storedBy('select count(*) from t group by g')).toBe('row, duplicate number');
  });

  it("a table's primary key through filters and projections that keep it", () => {
    expect(storedBy('select id, v from t where v > 0')).toBe('id');
    expect(storedBy('select v, id as k from t')).toBe('k');
    expect(storedBy('select v from t')).toBe('row, duplicate number');
    expect(storedBy('select id + 1 as k, v from t')).toBe('row, duplicate number');
    // Without a primary key a table is keyed by its hidden row id, which the view does not read.
    expect(storedBy('select a, b from n')).toBe('row, duplicate number');
  });

  it("a materialized view's own key (views on views)", () => {
    expect(storedBy('select n, g from keyed where n > 1')).toBe('g');
    expect(storedBy('select n from keyed')).toBe('row, duplicate number');
    expect(storedBy('select g, n from counted')).toBe('row, duplicate number');
  });

  it("joins: both sides' keys (inner, left, right), the left key (semi, anti), none for full", () => {
    expect(storedBy('select t.id as a, u.id as b, v, w from t join u on t.g = u.g')).toBe('a, b');
    expect(storedBy('select t.id as a, u.id as b from t left join u on t.g = u.g and t.v < u.w')).toBe('a, b');
    expect(storedBy('select t.id as a, u.id as b from t right join u on t.g = u.g')).toBe('a, b');
    expect(storedBy('select t.id as a, u.id as b from t join u on t.v > u.w')).toBe('a, b');
    expect(storedBy('select t.id as a, u.id as b from t full join u on t.g = u.g')).toBe('row, duplicate number');
    expect(storedBy('select id, v from t where exists (select 1 from u where u.g = t.g)')).toBe('id');
    expect(storedBy('select id from t where not exists (select 1 from u where u.g = t.g and u.w > t.v)')).toBe('id');
    expect(storedBy('select id from t where g in (select g from u)')).toBe('id');
    // One side without a key: none.
    expect(storedBy('select t.id, n.b from t join n on t.g = n.a')).toBe('row, duplicate number');
    // Joined by the other side's whole key: each row meets at most one row there, its own key is enough.
    expect(storedBy('select t.id, u.w from t join u on t.g = u.id')).toBe('id');
    expect(storedBy('select t.id, u.w from t left join u on t.g = u.id and u.w > t.v')).toBe('id');
    expect(storedBy('select t.v, u.id from t join u on t.id = u.g')).toBe('id');
    // A right join pads unmatched right rows with NULL ids: t.id alone is not unique.
    expect(storedBy('select t.id, u.w from t right join u on t.g = u.id')).toBe('row, duplicate number');
    expect(storedBy('select t.id, n.b from n left join t on n.a = t.id')).toBe('row, duplicate number');
    // A scalar subquery is a LEFT join with one row at most: the left key alone.
    expect(storedBy('select id, v - (select min(w) from u) as d from t')).toBe('id');
  });

  it('DISTINCT [ON], set operations without ALL, top-N and windows', () => {
    expect(storedBy('select distinct g, v from t')).toBe('g, v');
    expect(storedBy('select distinct on (g) g, id from t order by g, v')).toBe('g');
    expect(storedBy('select g from t union select g from u')).toBe('g');
    expect(storedBy('select g from t intersect select g from u')).toBe('g');
    expect(storedBy('select g from t except select g from u')).toBe('g');
    expect(storedBy('select g from t except all select g from u')).toBe('row, duplicate number');
    expect(storedBy('select g from t union all select g from u')).toBe('row, duplicate number');
    expect(storedBy('select id, v from t order by v desc limit 3')).toBe('id');
    expect(storedBy('select id, rank() over (partition by g order by v) as r from t')).toBe('id');
    expect(storedBy('select id, g from (select id, g, row_number() over (partition by g order by v) as rn from t) x where rn <= 2')).toBe('id');
  });

  it('an append-only source: the hidden row id alone through filters and projections; an aggregate over it by its keys', () => {
    const blind = planned('select auction, price * 2 as doubled from s where price > 10');
    expect(blind.key).toEqual([2]);
    expect(storedBy('select auction, price from s')).toBe(DUPLICATE_COLUMN);
    expect(storedBy('select auction, count(*) from s group by auction')).toBe('auction');
    // Each bid in several windows: LATERAL rows carry no ids, but only insert: numbered by the view
    // from plan version 8, as is an inner join of two append-only sources and a UNION ALL of them.
    const hop = "select auction, window_start from hop(s, date_time, interval '1 second', interval '2 seconds')";
    expect(storedBy(hop)).toBe('row number');
    expect(storedBy(hop, { planVersion: 7 })).toBe('row, duplicate number');
    expect(storedBy('select a.auction, b.price from s a join s b on a.auction = b.auction')).toBe('row number');
    expect(storedBy('select auction from s union all select auction from s')).toBe('row number');
    // Restarted with its stored key (the hidden column): numbered again.
    expect(storedBy(hop, { storedKey: [2] })).toBe('row number');
    // A join of a source and a table changes when the table does: counted.
    expect(storedBy('select s.auction, n.a from s join n on s.auction = n.a')).toBe('row, duplicate number');
  });

  it('constant rows: one row at most is keyed by the hidden column', () => {
    expect(storedBy('select 1 as one')).toBe(DUPLICATE_COLUMN);
    expect(storedBy('select * from (values (1), (1)) as x (a)')).toBe('row, duplicate number');
  });

  it('plan version 2 keeps the counted layout; a restart takes the stored key, not a new derivation', () => {
    expect(storedBy('select g, count(*) from t group by g', { planVersion: 2 })).toBe('row, duplicate number');
    // Stored by its whole row and duplicate number (a view created with that layout): kept.
    expect(storedBy('select g, count(*) from t group by g', { storedKey: [0, 1, 2] })).toBe('row, duplicate number');
    expect(storedBy('select g, count(*) from t group by g', { storedKey: [0] })).toBe('g');
    expect(planned('select count(*) from t', { storedKey: [1] }).key).toEqual([1]);
  });
});
