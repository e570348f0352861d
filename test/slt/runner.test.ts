// The sqllogictest runner validated against a real PostgreSQL 15: our plain-SQL slt file must pass
// on it (so the runner's formatting, sorting, hashing, error and count checks agree with a real
// server), and a file of deliberately wrong expectations must fail record by record.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { checkRows, describeFailures, expandGlob, runSltFile } from './runner.js';
import { parseSlt } from './slt-file.js';

const here = import.meta.dirname;
let server: PostgresServer;

beforeAll(async () => {
  server = await startPostgres();
});

afterAll(async () => {
  await server?.stop();
});

/** Counts statement/query records in a file by their header lines (independently of parseSlt). */
function countRecordLines(path: string): number {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => /^(statement|query) /.test(line)).length;
}

describe('runner against PostgreSQL', () => {
  it('passes basic/plain-sql.slt (with its include) on PostgreSQL', async () => {
    const file = join(here, 'basic/plain-sql.slt');
    const result = await runSltFile(file, { url: server.url, engines: ['postgres'] });
    expect(describeFailures(result)).toBe('');
    const total = countRecordLines(file) + countRecordLines(join(here, 'basic/plain-sql.slt.part'));
    expect(result.skipped).toBe(1);
    expect(result.records).toBe(total - result.skipped);
    expect(result.passed).toBe(result.records);
  });

  it('reports every deliberately wrong expectation as a failure at its line', async () => {
    const file = join(here, 'runner-fixtures/failing.slt.fixture');
    const lines = readFileSync(file, 'utf8').split('\n');
    const lineAfter = (marker: string): number => lines.findIndex((line) => line === `# marker: ${marker}`) + 2;
    const result = await runSltFile(file, { url: server.url, engines: ['postgres'] });
    const failedLines = result.failures.map((failure) => failure.line);
    const expectedFailures = ['wrong value', 'missing row', 'ok but errors', 'error but succeeds', 'wrong sqlstate', 'regex mismatch', 'wrong count', 'wrong hash', 'NULL is not empty'];
    expect(failedLines).toEqual(expectedFailures.map(lineAfter));
    const reasons = result.failures.map((failure) => failure.reason);
    expect(reasons[2]).toMatch(/unexpected error: .*slt_fail_missing.*42P01/s);
    expect(reasons[3]).toBe('expected an error, but it succeeded');
    expect(reasons[4]).toMatch(/expected SQLSTATE 22012, got 42P01/);
    expect(reasons[6]).toBe('expected 5 rows affected, got 2');
    expect(result.passed).toBe(3); // CREATE, INSERT, DROP
    expect(result.unsupported.map((entry) => entry.what)).toEqual(['system ok']);
    expect(result.errors.join('\n')).toMatch(/include no-such-file-\*\.slt matches no file/);
    expect(failedLines).not.toContain(lineAfter('after halt (never run)'));
  });
});

describe('slt reading and comparison', () => {
  it('reads the sqllogictest-rs records RisingWave uses', () => {
    const text = [
      'statement ok',
      'SET RW_IMPLICIT_FLUSH TO true;',
      '',
      'statement error Time-travel version expired: table [0-9]+',
      'SELECT 1',
      '',
      'statement error',
      'create table bad',
      '----',
      'db error: ERROR: Failed to run the query',
      '',
      'Caused by:',
      '  something',
      '',
      '',
      'query IT rowsort my_label',
      'select 1,',
      "  'x'",
      '----',
      '1 x',
      '',
      'onlyif risingwave',
      'sleep 5s',
      '',
      'connection other',
      'statement ok',
      'select 2',
      '',
      'control sortmode valuesort',
    ].join('\n');
    const records = parseSlt(text, 'inline.slt');
    expect(records.map((record) => record.kind)).toEqual(['statement', 'statement', 'statement', 'query', 'sleep', 'statement', 'control']);
    expect(records[1]).toMatchObject({ expect: { kind: 'error', error: { pattern: 'Time-travel version expired: table [0-9]+' } } });
    expect(records[2]).toMatchObject({ sql: 'create table bad', expect: { kind: 'error', error: { message: 'db error: ERROR: Failed to run the query\n\nCaused by:\n  something' } } });
    expect(records[3]).toMatchObject({ line: 16, sql: "select 1,\n  'x'", types: 'IT', sortMode: 'rowsort', label: 'my_label', expected: ['1 x'] });
    expect(records[4]).toMatchObject({ durationMs: 5000, conditions: [{ kind: 'onlyif', engine: 'risingwave' }] });
    expect(records[5]).toMatchObject({ connection: 'other', conditions: [] });
  });

  it('compares rows with whitespace collapsed, NULL and (empty), and sort modes', () => {
    expect(checkRows([[1, 'a  b'], [2, null]], ['1   a b', '2 NULL'], 'nosort')).toBeUndefined();
    expect(checkRows([[2, ''], [1, 'x']], ['1 x', '2 (empty)'], 'rowsort')).toBeUndefined();
    expect(checkRows([[2, ''], [1, 'x']], ['1 x', '2 (empty)'], 'nosort')).toMatch(/expected/);
    expect(checkRows([['b', 'a'], ['c', 'd']], ['a', 'b', 'c', 'd'], 'valuesort')).toBeUndefined();
  });

  it('expands include globs relative to a directory, including **', () => {
    // A tree shaped like a conformance suite's folder: parts, a nested part `*` must not reach,
    // other files, and two .slt files at different depths.
    const conformance = mkdtempSync(join(tmpdir(), 'oxbow-slt-glob-'));
    try {
      for (const file of [
        'aggregate/avg.slt.part',
        'aggregate/count.slt.part',
        'aggregate/distinct.slt.part',
        'aggregate/selective_count.slt.part',
        'aggregate/sum.slt.part',
        'aggregate/README.md',
        'aggregate/nested/deeper.slt.part',
        'join/natural_and_cross_join.slt',
        'join/inner.slt.part',
        'top_n/group/group_top_n.slt',
      ]) {
        mkdirSync(dirname(join(conformance, file)), { recursive: true });
        writeFileSync(join(conformance, file), 'statement ok\nselect 1\n');
      }
      const parts = expandGlob(conformance, './aggregate/*.slt.part');
      expect(parts.map((path) => path.slice(conformance.length + 1))).toEqual([
        'aggregate/avg.slt.part',
        'aggregate/count.slt.part',
        'aggregate/distinct.slt.part',
        'aggregate/selective_count.slt.part',
        'aggregate/sum.slt.part',
      ]);
      expect(expandGlob(conformance, '**/*.slt').length).toBe(2);
    } finally {
      rmSync(conformance, { recursive: true, force: true });
    }
  });
});
