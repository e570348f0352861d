// Runs sqllogictest files (read by slt-file.ts) over the PostgreSQL wire protocol with the `pg`
// driver, the way sqllogictest-rs runs RisingWave's e2e tests: each record's SQL is sent as one
// simple-protocol query string; result values are PostgreSQL's text output, NULL printed `NULL` and
// the empty string `(empty)`; rows are compared line by line with whitespace collapsed on both
// sides (sqllogictest-rs's default validator); `rowsort` sorts rows, `valuesort` sorts all values;
// `hash-threshold` results ("N values hashing to MD5") are compared by hash; `statement error` /
// `query error` regexes are searched in the error text (`db error: ERROR: message` plus DETAIL and
// HINT lines, as tokio-postgres prints it); oxbow's `SQLSTATE XXXXX` expectation checks the code.
// Column type letters are not checked (RisingWave's own files get some wrong). Failures are
// returned as data, never thrown, so a whole peer suite can be counted.

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { parseSlt, type ErrorExpectation, type SltRecord, type SortMode } from './slt-file.js';

export interface RunOptions {
  /** postgres://user@host:port/db */
  readonly url: string;
  /** Engine names for `skipif` / `onlyif` (default ['oxbow']). */
  readonly engines?: readonly string[];
  /** Caps every `sleep` (e.g. 0 to skip sleeps when a file's timing does not matter). */
  readonly maxSleepMs?: number;
  /** A query that takes longer fails with a timeout and its connection is replaced (default 60 s). */
  readonly queryTimeoutMs?: number;
}

export interface RecordFailure {
  readonly file: string;
  readonly line: number;
  readonly sql: string;
  readonly reason: string;
}

export interface SltResult {
  readonly file: string;
  /** Statements and queries run. */
  records: number;
  passed: number;
  readonly failures: RecordFailure[];
  /** Records skipped by skipif/onlyif. */
  skipped: number;
  /** Records of a kind the runner does not support (system ok, unknown control), with where. */
  readonly unsupported: { file: string; line: number; what: string }[];
  /** Files that could not be read or included. */
  readonly errors: string[];
}

// Values come back as PostgreSQL printed them: every type parser is the identity.
const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

interface DatabaseError {
  message: string;
  code?: string;
  detail?: string;
  hint?: string;
}

/** The error as tokio-postgres displays it (what RisingWave's regexes were written against). */
function errorText(error: DatabaseError): string {
  let text = `db error: ERROR: ${error.message}`;
  if (error.detail) text += `\nDETAIL: ${error.detail}`;
  if (error.hint) text += `\nHINT: ${error.hint}`;
  return text;
}

function normalize(text: string): string {
  return text.trim().split(/\s+/).filter((part) => part !== '').join(' ');
}

function formatValue(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = String(value);
  return text === '' ? '(empty)' : text;
}

/** Matches an error against an expectation; returns a reason for a mismatch, or undefined. */
export function checkError(expectation: ErrorExpectation, error: DatabaseError): string | undefined {
  if (expectation.sqlstate !== undefined && error.code !== expectation.sqlstate) {
    return `expected SQLSTATE ${expectation.sqlstate}, got ${error.code ?? 'none'}: ${error.message}`;
  }
  const text = errorText(error);
  if (expectation.pattern !== undefined) {
    let matched: boolean;
    try {
      matched = new RegExp(expectation.pattern).test(text);
    } catch {
      matched = text.includes(expectation.pattern);
    }
    if (!matched) return `error "${text}" does not match /${expectation.pattern}/`;
  }
  if (expectation.message !== undefined && normalize(expectation.message) !== normalize(text)) {
    return `error "${text}" is not the expected "${expectation.message}"`;
  }
  return undefined;
}

/** Compares result rows with a query record's expected lines; returns a reason or undefined. */
export function checkRows(rows: readonly (readonly unknown[])[], expected: readonly string[], sortMode: SortMode): string | undefined {
  let actualLines: string[];
  let expectedLines: string[];
  if (sortMode === 'valuesort') {
    actualLines = rows.flatMap((row) => row.map((value) => normalize(formatValue(value)))).sort();
    expectedLines = expected.flatMap((line) => normalize(line).split(' ')).filter((value) => value !== '').sort();
  } else {
    actualLines = rows.map((row) => normalize(row.map(formatValue).join(' ')));
    expectedLines = expected.map(normalize);
    if (sortMode === 'rowsort') {
      actualLines.sort();
      expectedLines.sort();
    }
  }
  const hashed = expected.length === 1 ? /^(\d+) values hashing to ([0-9a-f]{32})$/.exec(expected[0]!.trim()) : null;
  if (hashed !== null) {
    // sqllogictest's hash: every value (in sort-mode order) followed by a newline, MD5.
    let values: string[];
    if (sortMode === 'valuesort') values = actualLines;
    else {
      const ordered = rows.map((row) => row.map(formatValue));
      if (sortMode === 'rowsort') ordered.sort((a, b) => (a.join(' ') < b.join(' ') ? -1 : a.join(' ') > b.join(' ') ? 1 : 0));
      values = ordered.flat();
    }
    const hash = createHash('md5');
    for (const value of values) hash.update(`${value}\n`);
    const digest = hash.digest('hex');
    if (Number(hashed[1]) !== values.length || digest !== hashed[2]) return `expected ${expected[0]!.trim()}, got ${values.length} values hashing to ${digest}`;
    return undefined;
  }
  if (actualLines.length === expectedLines.length && actualLines.every((line, index) => line === expectedLines[index])) return undefined;
  const shown = (lines: string[]): string => (lines.length === 0 ? '(no rows)' : lines.slice(0, 20).join('\n') + (lines.length > 20 ? `\n... ${lines.length} rows` : ''));
  return `expected:\n${shown(expectedLines)}\nactual:\n${shown(actualLines)}`;
}

function globToRegExp(segment: string): RegExp {
  let pattern = '';
  for (const char of segment) {
    if (char === '*') pattern += '[^/]*';
    else if (char === '?') pattern += '[^/]';
    else pattern += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${pattern}$`);
}

/** Files matching `pattern` (relative to `baseDir`; `*`, `?` and `**` segments), sorted. */
export function expandGlob(baseDir: string, pattern: string): string[] {
  const segments = pattern.split('/').filter((segment) => segment !== '' && segment !== '.');
  const start = pattern.startsWith('/') ? '/' : baseDir;
  const found: string[] = [];
  const walk = (dir: string, index: number): void => {
    if (index === segments.length) {
      found.push(dir);
      return;
    }
    const segment = segments[index]!;
    if (segment === '..') return walk(resolve(dir, '..'), index + 1);
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      return;
    }
    if (segment === '**') {
      walk(dir, index + 1);
      for (const entry of entries) if (statSync(join(dir, entry)).isDirectory()) walk(join(dir, entry), index);
      return;
    }
    if (!/[*?]/.test(segment)) {
      if (entries.includes(segment)) walk(join(dir, segment), index + 1);
      return;
    }
    const regex = globToRegExp(segment);
    for (const entry of entries) if (regex.test(entry)) walk(join(dir, entry), index + 1);
  };
  walk(start, 0);
  return [...new Set(found)].filter((path) => statSync(path).isFile()).sort();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

class Connections {
  private readonly clients = new Map<string, pg.Client>();

  constructor(
    private readonly url: string,
    private readonly queryTimeoutMs: number,
  ) {}

  async get(name: string): Promise<pg.Client> {
    const existing = this.clients.get(name);
    if (existing !== undefined) return existing;
    const client = new pg.Client({ connectionString: this.url, types: rawTypes, query_timeout: this.queryTimeoutMs });
    client.on('error', () => {
      this.clients.delete(name);
    });
    this.clients.set(name, client);
    try {
      await client.connect();
    } catch (error) {
      this.clients.delete(name);
      throw error;
    }
    return client;
  }

  /** Drops a connection (after a timeout its protocol state is unknown). */
  async discard(name: string): Promise<void> {
    const client = this.clients.get(name);
    this.clients.delete(name);
    await client?.end().catch(() => {});
  }

  async closeAll(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((client) => client.end().catch(() => {})));
  }
}

interface RunState {
  sortMode: SortMode;
  halted: boolean;
}

type Outcome = { ok: true; result: pg.QueryResult } | { ok: false; error: DatabaseError };

async function execute(connections: Connections, name: string, sql: string): Promise<Outcome> {
  let client: pg.Client;
  try {
    client = await connections.get(name);
  } catch (error) {
    return { ok: false, error: { message: `cannot connect: ${(error as Error).message}` } };
  }
  try {
    const result = (await client.query({ text: sql, rowMode: 'array' })) as pg.QueryResult | pg.QueryResult[];
    if (Array.isArray(result)) {
      const withRows = [...result].reverse().find((part) => (part.fields?.length ?? 0) > 0);
      return { ok: true, result: withRows ?? result[result.length - 1]! };
    }
    return { ok: true, result };
  } catch (error) {
    const failure = error as DatabaseError & { code?: string };
    if (typeof failure.code !== 'string') {
      // Not a server error: a timeout or a broken connection. Start the next record afresh.
      await connections.discard(name);
      return { ok: false, error: { message: `${(error as Error).message ?? String(error)}` } };
    }
    return { ok: false, error: failure };
  }
}

async function runRecords(records: readonly SltRecord[], file: string, options: Required<RunOptions>, connections: Connections, result: SltResult, state: RunState, depth: number): Promise<void> {
  for (const record of records) {
    if (state.halted) return;
    const applies = record.conditions.every((condition) => (condition.kind === 'skipif' ? !options.engines.includes(condition.engine) : options.engines.includes(condition.engine)));
    if (!applies) {
      if (record.kind === 'statement' || record.kind === 'query' || record.kind === 'queryError') result.skipped++;
      continue;
    }
    const connection = record.connection ?? 'default';
    switch (record.kind) {
      case 'include': {
        const matches = expandGlob(dirname(file), record.pattern);
        if (matches.length === 0) result.errors.push(`${file}:${record.line}: include ${record.pattern} matches no file`);
        if (depth > 20) {
          result.errors.push(`${file}:${record.line}: includes nested too deep`);
          break;
        }
        for (const included of matches) {
          let text: string;
          try {
            text = readFileSync(included, 'utf8');
          } catch (error) {
            result.errors.push(`${included}: ${(error as Error).message}`);
            continue;
          }
          let parsed: SltRecord[];
          try {
            parsed = parseSlt(text, included);
          } catch (error) {
            result.errors.push((error as Error).message);
            continue;
          }
          await runRecords(parsed, included, options, connections, result, state, depth + 1);
        }
        break;
      }
      case 'sleep':
        await sleep(Math.min(record.durationMs, options.maxSleepMs));
        break;
      case 'halt':
        state.halted = true;
        return;
      case 'control':
        state.sortMode = record.sortMode;
        break;
      case 'hashThreshold':
        // Only matters when writing expectations: an expected "N values hashing to H" line is
        // compared by hash whatever the threshold.
        break;
      case 'unsupported':
        result.unsupported.push({ file: record.file, line: record.line, what: record.what });
        break;
      case 'statement':
      case 'query':
      case 'queryError': {
        result.records++;
        const outcome = await execute(connections, connection, record.sql);
        const reason = judge(record, outcome, state);
        if (reason === undefined) result.passed++;
        else result.failures.push({ file: record.file, line: record.line, sql: record.sql, reason });
        break;
      }
    }
  }
}

function judge(record: SltRecord & { kind: 'statement' | 'query' | 'queryError' }, outcome: Outcome, state: RunState): string | undefined {
  if (record.kind === 'queryError' || (record.kind === 'statement' && record.expect.kind === 'error')) {
    const expectation = record.kind === 'queryError' ? record.error : (record.expect as { error: ErrorExpectation }).error;
    if (outcome.ok) return 'expected an error, but it succeeded';
    return checkError(expectation, outcome.error);
  }
  if (!outcome.ok) return `unexpected error: ${errorText(outcome.error)}${outcome.error.code ? ` (SQLSTATE ${outcome.error.code})` : ''}`;
  if (record.kind === 'statement') {
    if (record.expect.kind === 'count' && outcome.result.rowCount !== record.expect.count) {
      return `expected ${record.expect.count} rows affected, got ${outcome.result.rowCount}`;
    }
    return undefined;
  }
  const rows = (outcome.result.rows ?? []) as unknown as unknown[][];
  return checkRows(rows, record.expected, record.sortMode ?? state.sortMode);
}

/** Runs one slt file (and its includes) against `options.url`; failures are in the result. */
export async function runSltFile(path: string, options: RunOptions): Promise<SltResult> {
  const full: Required<RunOptions> = {
    url: options.url,
    engines: options.engines ?? ['oxbow'],
    maxSleepMs: options.maxSleepMs ?? Number.POSITIVE_INFINITY,
    queryTimeoutMs: options.queryTimeoutMs ?? 60_000,
  };
  const result: SltResult = { file: path, records: 0, passed: 0, failures: [], skipped: 0, unsupported: [], errors: [] };
  let records: SltRecord[];
  try {
    records = parseSlt(readFileSync(path, 'utf8'), path);
  } catch (error) {
    result.errors.push((error as Error).message);
    return result;
  }
  const connections = new Connections(full.url, full.queryTimeoutMs);
  try {
    await runRecords(records, path, full, connections, result, { sortMode: 'nosort', halted: false }, 0);
  } finally {
    await connections.closeAll();
  }
  return result;
}

/** A readable report of a result's failures (for test messages). */
export function describeFailures(result: SltResult): string {
  const lines: string[] = [];
  for (const failure of result.failures) lines.push(`${failure.file}:${failure.line}\n  ${failure.sql.replace(/\n/g, '\n  ')}\n  -> ${failure.reason.replace(/\n/g, '\n     ')}`);
  for (const error of result.errors) lines.push(`error: ${error}`);
  return lines.join('\n');
}
