// Golden test of the incrementalization pass: EXPLAIN CREATE MATERIALIZED VIEW of every case in
// explain-stream-cases.sql (the streaming plan, linear / stateful, state tables), compared with
// explain-stream.golden. `UPDATE=1 npx vitest run planner/stream/tests/explain-stream.test.ts`
// rewrites the golden file; review its diff like code.

import { join } from 'node:path';
import { beforeAll, describe, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { planStatement } from '../../index.js';
import { expectGolden, goldenCatalog, readCases } from '../../tests/golden.js';

const here = import.meta.dirname;

const catalog = goldenCatalog({ indexes: false });

const cases = (): string[] => readCases(join(here, 'explain-stream-cases.sql'));

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
    expectGolden(join(here, 'explain-stream.golden'), `${cases().map(render).join('\n\n')}\n`);
  });
});
