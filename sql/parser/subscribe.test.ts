// SUBSCRIBE, COPY (SUBSCRIBE ...) TO STDOUT, CREATE / DROP SUBSCRIPTION, the cursors over a subscription: the
// errors' positions (derived from the input text with indexOf).
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from './index.js';
import { SqlError } from '../errors.js';

beforeAll(async () => {
  await initParser();
});

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function one(sql: string): Any {
  const statements = parse(sql);
  expect(statements).toHaveLength(1);
  return statements[0]!.node as Any;
}

function syntaxErrorPosition(sql: string): number | undefined {
  try {
    parse(sql);
  } catch (error) {
    expect(error).toBeInstanceOf(SqlError);
    expect((error as SqlError).code).toBe('42601');
    return (error as SqlError).position;
  }
  throw new Error(`no syntax error for ${sql}`);
}

describe('SUBSCRIBE', () => {
  it('reads a relation, AS OF an epoch number and the options', () => {
    const sql = 'SUBSCRIBE TO s.v AS OF 117731987903676416 WITH (PROGRESS, SNAPSHOT = false)';
    const node = one(sql)['OxbowSubscribe'];
    expect(node.relation).toMatchObject({ schemaname: 's', relname: 'v', location: sql.indexOf('s.v') });
    expect(node.asOf.A_Const.fval.fval).toBe('117731987903676416');
    expect(node.asOfLocation).toBe(sql.indexOf('1177'));
    expect(node.options).toEqual({ progress: '', snapshot: 'false' });
    expect(node.copyOptions).toBeUndefined();
  });

  it('reads COPY (SUBSCRIBE (query)) TO STDOUT with COPY options and an AS OF expression', () => {
    const sql = "COPY (SUBSCRIBE (SELECT a FROM t WHERE a > 1) AS OF now() - interval '1 minute') TO STDOUT WITH (FORMAT text)";
    const node = one(sql)['OxbowSubscribe'];
    expect(node.relation).toBeUndefined();
    expect(node.queryText).toBe('SELECT a FROM t WHERE a > 1');
    expect(node.query.SelectStmt.fromClause[0].RangeVar.location).toBe(sql.indexOf('t WHERE'));
    expect(Object.keys(node.asOf)).toEqual(['A_Expr']);
    expect(node.copyOptions).toEqual({ format: 'text' });
  });

  it('leaves COPY (SELECT ...) to PostgreSQL', () => {
    expect(Object.keys(one('COPY (SELECT 1) TO STDOUT'))).toEqual(['CopyStmt']);
  });

  it('puts syntax errors where PostgreSQL would', () => {
    expect(syntaxErrorPosition('SUBSCRIBE v WITH (PROGRESS) extra')).toBe('SUBSCRIBE v WITH (PROGRESS) '.length + 1);
    expect(syntaxErrorPosition('COPY (SUBSCRIBE v) TO STDIN')).toBe('COPY (SUBSCRIBE v) TO '.length + 1);
    expect(syntaxErrorPosition('SUBSCRIBE (SELECT FROM WHERE)')).toBeGreaterThan(0);
    expect(syntaxErrorPosition('SUBSCRIBE v AS OF WITH (PROGRESS)')).toBe('SUBSCRIBE v AS OF '.length + 1);
  });
});

describe('CREATE / DROP SUBSCRIPTION', () => {
  it('reads RisingWave\'s form', () => {
    const sql = "CREATE SUBSCRIPTION IF NOT EXISTS sub FROM public.mv WITH (retention = '1 day')";
    expect(one(sql)['OxbowCreateSubscription']).toMatchObject({
      name: { relname: 'sub', location: sql.indexOf('sub') },
      from: { schemaname: 'public', relname: 'mv', location: sql.indexOf('public.mv') },
      ifNotExists: true,
      options: { retention: '1 day' },
    });
    expect(one('DROP SUBSCRIPTION IF EXISTS a, s.b')['OxbowDropSubscription']).toMatchObject({ names: [{ relname: 'a' }, { schemaname: 's', relname: 'b' }], missingOk: true });
  });

  it('refuses PostgreSQL\'s logical-replication form at its first word', () => {
    const sql = "CREATE SUBSCRIPTION sub CONNECTION 'host=x' PUBLICATION p";
    expect(syntaxErrorPosition(sql)).toBe(sql.indexOf('CONNECTION') + 1);
  });
});

describe('cursors over a subscription', () => {
  it("reads Materialize's DECLARE ... CURSOR FOR SUBSCRIBE", () => {
    expect(one('DECLARE c CURSOR FOR SUBSCRIBE v WITH (PROGRESS)')['OxbowDeclareSubscribe']).toMatchObject({ name: 'c', hold: false, subscribe: { relation: { relname: 'v' }, options: { progress: '' } } });
    expect(one('DECLARE "C" CURSOR WITH HOLD FOR SUBSCRIBE (SELECT a FROM t) AS OF 7')['OxbowDeclareSubscribe']).toMatchObject({ name: 'C', hold: true, subscribe: { queryText: 'SELECT a FROM t' } });
    // A DECLARE of a query stays PostgreSQL's.
    expect(Object.keys(one('DECLARE c CURSOR FOR SELECT 1'))).toEqual(['DeclareCursorStmt']);
  });

  it("reads RisingWave's DECLARE ... SUBSCRIPTION CURSOR with each start", () => {
    const node = (sql: string): Any => one(sql)['OxbowDeclareSubscriptionCursor'];
    expect(node('DECLARE cur SUBSCRIPTION CURSOR FOR s.sub')).toMatchObject({ name: 'cur', subscription: { schemaname: 's', relname: 'sub' }, start: { kind: 'now' } });
    expect(node('DECLARE cur SUBSCRIPTION CURSOR FOR sub SINCE proctime()').start).toEqual({ kind: 'now' });
    expect(node('DECLARE cur SUBSCRIPTION CURSOR FOR sub SINCE begin()').start).toEqual({ kind: 'begin' });
    expect(node('DECLARE cur SUBSCRIPTION CURSOR FOR sub SINCE 1711527245871')).toMatchObject({ start: { kind: 'millis', millis: '1711527245871' }, startLocation: 'DECLARE cur SUBSCRIPTION CURSOR FOR sub SINCE '.length });
    expect(node('DECLARE cur SUBSCRIPTION CURSOR FOR sub FULL').start).toEqual({ kind: 'full' });
    expect(syntaxErrorPosition('DECLARE cur SUBSCRIPTION CURSOR FOR sub SINCE yesterday')).toBe('DECLARE cur SUBSCRIPTION CURSOR FOR sub SINCE '.length + 1);
    expect(syntaxErrorPosition('DECLARE cur SUBSCRIPTION CURSOR sub')).toBe('DECLARE cur SUBSCRIPTION CURSOR '.length + 1);
  });

  it('reads FETCH ... WITH (timeout = ...) as PostgreSQL\'s FetchStmt with the options', () => {
    expect(one("FETCH 10 FROM cur WITH (timeout = '1s')")['FetchStmt']).toMatchObject({ portalname: 'cur', howMany: 10, oxbowOptions: { timeout: '1s' } });
    expect(one("FETCH ALL c WITH (TIMEOUT = '0s')")['FetchStmt']).toMatchObject({ portalname: 'c', oxbowOptions: { timeout: '0s' } });
    expect(one('FETCH NEXT FROM c')['FetchStmt']).not.toHaveProperty('oxbowOptions');
    const sql = "FETCH 1 c WITH (timeout = '1s') extra";
    expect(syntaxErrorPosition(sql)).toBe(sql.indexOf('extra') + 1);
  });
});
