// The catalog sqlsmith learns from must be truthful: every pg_proc row (functions and
// aggregates) and every pg_operator row over concrete types names something oxbow really runs
// with those argument types and that result type. Each row becomes a call on NULLs of its
// argument types, over the wire; the call must resolve (no 42883 / 42725), return a column of
// prorettype / oprresult, and fail, if at all, with a clean error that is not XX000. Rows with
// pseudo-type parameters ("any", anyarray...) are checked by sqlsmith.test.ts instead.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';

let oxbow: OxbowServer;
let client: pg.Client;

beforeAll(async () => {
  oxbow = await startOxbow();
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
}, 120_000);

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
});

interface TypeRow {
  oid: number;
  typname: string;
  typtype: string;
}

async function types(): Promise<Map<number, TypeRow>> {
  const result = await client.query<TypeRow>('SELECT oid::int4 AS oid, typname::text AS typname, typtype::text AS typtype FROM pg_type');
  return new Map(result.rows.map((row) => [row.oid, row]));
}

function nullOf(type: TypeRow): string {
  return `NULL::"${type.typname}"`;
}

interface Outcome {
  readonly sql: string;
  readonly problem?: string;
}

async function check(sql: string, expectedType: number): Promise<Outcome> {
  try {
    const result = await client.query({ text: sql, rowMode: 'array' });
    const actual = result.fields[0]?.dataTypeID;
    return actual === expectedType ? { sql } : { sql, problem: `result type ${actual}, catalog says ${expectedType}` };
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    if (code === 'XX000' || code === '42883' || code === '42725' || !/^[0-9A-Z]{5}$/.test(code)) {
      return { sql, problem: `${code}: ${(error as Error).message}` };
    }
    return { sql };
  }
}

describe('pg_proc and pg_operator name what oxbow runs', () => {
  it('every function and aggregate over concrete types resolves and returns prorettype', async () => {
    const byOid = await types();
    const rows = await client.query<{ proname: string; prokind: string; prorettype: number; args: string; provariadic: number }>(
      "SELECT proname::text AS proname, prokind::text AS prokind, prorettype::int4 AS prorettype, proargtypes::text AS args, provariadic::int4 AS provariadic FROM pg_proc WHERE prokind IN ('f', 'a')",
    );
    expect(rows.rows.filter((row) => row.prokind === 'a').length).toBeGreaterThan(40);
    const problems: string[] = [];
    let checked = 0;
    for (const row of rows.rows) {
      if (row.provariadic !== 0) continue;
      // proargtypes is an oidvector: its text is the OIDs separated by spaces.
      const args = row.args.split(' ').filter((a) => a !== '').map(Number);
      const argTypes = args.map((oid) => byOid.get(oid));
      const result = byOid.get(row.prorettype);
      if (argTypes.some((t) => t === undefined || t.typtype === 'p') || result === undefined || result.typtype === 'p') continue;
      const call = row.prokind === 'a' && args.length === 0 ? `${row.proname}(*)` : `"${row.proname}"(${argTypes.map((t) => nullOf(t!)).join(', ')})`;
      const outcome = await check(`SELECT ${call}`, row.prorettype);
      checked++;
      if (outcome.problem !== undefined) problems.push(`${outcome.sql}: ${outcome.problem}`);
    }
    expect(checked).toBeGreaterThan(200);
    expect(problems).toEqual([]);
  });

  it('every binary and prefix operator over concrete types resolves and returns oprresult', async () => {
    const byOid = await types();
    const rows = await client.query<{ oprname: string; oprleft: number; oprright: number; oprresult: number }>(
      'SELECT oprname::text AS oprname, oprleft::int4 AS oprleft, oprright::int4 AS oprright, oprresult::int4 AS oprresult FROM pg_operator',
    );
    const problems: string[] = [];
    let checked = 0;
    for (const row of rows.rows) {
      const left = row.oprleft === 0 ? undefined : byOid.get(row.oprleft);
      const right = byOid.get(row.oprright);
      const result = byOid.get(row.oprresult);
      if ((row.oprleft !== 0 && (left === undefined || left.typtype === 'p')) || right === undefined || right.typtype === 'p' || result === undefined || result.typtype === 'p') continue;
      const expression = left === undefined ? `${row.oprname} ${nullOf(right)}` : `${nullOf(left)} ${row.oprname} ${nullOf(right)}`;
      const outcome = await check(`SELECT ${expression}`, row.oprresult);
      checked++;
      if (outcome.problem !== undefined) problems.push(`${outcome.sql}: ${outcome.problem}`);
    }
    expect(checked).toBeGreaterThan(100);
    expect(problems).toEqual([]);
  });
});
