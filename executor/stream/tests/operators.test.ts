// Operators over change batches, written as readable fixtures (`+ row` / `- row` per step): a
// dataflow built from a planned view over the in-memory state store, fed by hand-written changes,
// its output compared with hand-derived changes. Covers the retractions that matter: an update as
// delete + insert, a group disappearing, an outer join's NULL-padded row replaced by a match, a
// top-N row pushed out.

import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { planStream } from '../../../planner/stream/index.js';
import type { CatalogReader } from '../../../planner/catalog-reader.js';
import { StreamManager } from '../stream-manager.js';
import { changes, output } from './fixture-lines.js';
import type { Dataflow } from '../dataflow.js';

const int4 = scalar('int4');
const relations: RelationDef[] = [
  { id: 100, kind: 'table', schema: 'public', name: 'l', columns: [{ name: 'id', type: int4, nullable: false, hidden: false }, { name: 'k', type: int4, nullable: true, hidden: false }, { name: 'v', type: int4, nullable: true, hidden: false }], primaryKey: [0], dependsOn: [] },
  { id: 101, kind: 'table', schema: 'public', name: 'r', columns: [{ name: 'id', type: int4, nullable: false, hidden: false }, { name: 'k', type: int4, nullable: true, hidden: false }], primaryKey: [0], dependsOn: [] },
];
const catalog: CatalogReader = {
  resolveRelation: (_schema, name) => relations.find((relation) => relation.name === name),
  relationById: (id) => relations.find((relation) => relation.id === id),
  schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
};

function dataflow(sql: string): Dataflow {
  let next = 1000;
  const planned = planStream(parse(sql)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'v', allocateStateTableId: () => next++ });
  const flow = new StreamManager(createMemoryStateStore()).build(900, planned.stream);
  flow.initialize();
  return flow;
}

beforeAll(async () => {
  await initParser();
});

describe('streaming operators over change batches', () => {
  it('hash aggregate: an update retracts the old group row, a group disappears', () => {
    const flow = dataflow('select k, count(*), sum(v) from l group by k');
    expect(output(flow.push(100, changes('+ 1 7 10', '+ 2 7 5', '+ 3 8 1')))).toEqual(['+ 7 | 2 | 15', '+ 8 | 1 | 1']);
    expect(output(flow.push(100, changes('- 2 7 5', '+ 2 7 6')))).toEqual(['+ 7 | 2 | 16', '- 7 | 2 | 15']);
    expect(output(flow.push(100, changes('- 3 8 1')))).toEqual(['- 8 | 1 | 1']);
  });

  it('left join: the NULL-padded row is replaced when a match arrives, and comes back when it goes', () => {
    const flow = dataflow('select l.id, r.id from l left join r on l.k = r.k');
    expect(output(flow.push(100, changes('+ 1 7 0')))).toEqual(['+ 1 | NULL']);
    expect(output(flow.push(101, changes('+ 50 7')))).toEqual(['+ 1 | 50', '- 1 | NULL']);
    expect(output(flow.push(101, changes('+ 51 7')))).toEqual(['+ 1 | 51']);
    expect(output(flow.push(101, changes('- 50 7', '- 51 7')))).toEqual(['+ 1 | NULL', '- 1 | 50', '- 1 | 51']);
  });

  it('top-N: a new first row pushes the last one out', () => {
    const flow = dataflow('select id, v from l order by v desc limit 2');
    expect(output(flow.push(100, changes('+ 1 0 10', '+ 2 0 20', '+ 3 0 5')))).toEqual(['+ 1 | 10', '+ 2 | 20']);
    expect(output(flow.push(100, changes('+ 4 0 30')))).toEqual(['+ 4 | 30', '- 1 | 10']);
  });

  it('linear operators pass signs through; duplicates are kept', () => {
    const flow = dataflow('select v * 2 from l where k = 1');
    expect(output(flow.push(100, changes('+ 1 1 3', '+ 2 1 3', '+ 3 2 3')))).toEqual(['+ 6', '+ 6']);
    expect(output(flow.push(100, changes('- 1 1 3')))).toEqual(['- 6']);
  });
});
