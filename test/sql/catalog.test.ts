// The function library's catalog view: allFunctions() feeds pg_proc, so each row must be unique by
// OID and, where PostgreSQL 15 has the same function, carry PostgreSQL's OID, name and argument
// types (checked against the real pg_proc).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { ANY, allFunctions, allOperators } from '../../sql/functions.js';
import { typeOid } from '../../sql/types.js';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

describe('catalog rows of the function library', () => {
  it('pg_proc rows are unique by OID and match PostgreSQL where the OID is PostgreSQL\'s', async () => {
    const functions = allFunctions();
    expect(new Set(functions.map((fn) => fn.oid)).size).toBe(functions.length);
    const result = await server.query('SELECT oid::int4, proname::text, proargtypes::oid[]::text FROM pg_proc WHERE oid < 16384');
    const catalog = new Map(result.rows.map((row) => [Number(row[0]), { name: row[1]!, args: row[2]!.replace(/^\[[^=]*=/, '') }]));
    const mismatched: string[] = [];
    let matched = 0;
    for (const fn of functions) {
      const row = catalog.get(fn.oid);
      if (row === undefined) continue;
      matched++;
      const args = `{${fn.argumentTypes.map((t) => (t === ANY ? 2276 : typeOid(t))).join(',')}}`;
      if (row.name !== fn.name || (row.args !== args && fn.variadic === undefined)) mismatched.push(`${fn.oid}: ours ${fn.name}${args}, postgres ${row.name}${row.args}`);
    }
    expect(mismatched).toEqual([]);
    expect(matched).toBeGreaterThan(150);
  });
  it('operators carry the OID of the function implementing them in PostgreSQL', async () => {
    const result = await server.query('SELECT oprname::text, oprleft::int4, oprright::int4, oprcode::oid::int4 FROM pg_operator');
    const catalog = new Map(result.rows.map((row) => [`${row[0]}(${row[1]},${row[2]})`, Number(row[3])]));
    const mismatched: string[] = [];
    for (const op of allOperators()) {
      const key = op.argumentTypes.length === 1 ? `${op.name}(0,${typeOid(op.argumentTypes[0]!)})` : `${op.name}(${typeOid(op.argumentTypes[0]!)},${typeOid(op.argumentTypes[1]!)})`;
      const expected = catalog.get(key);
      if (expected !== undefined && expected !== op.oid && ![2003, 2004].includes(op.oid)) mismatched.push(`${key}: ours ${op.oid}, postgres ${expected}`);
    }
    expect(mismatched).toEqual([]);
  });
});
