// Every Nexmark query of bench/nexmark/ against the table in bench/nexmark/README.md of what oxbow
// runs. A query marked "runs" is run as the benchmark runs it (an in-process engine, the generator
// sources over 10,000 events, two splits, 50 ms barriers): its view must be non-empty and equal
// its query recomputed as a batch SELECT over the same events in the sources' tables (incremental
// equals recompute). A query marked "refused" must fail with the SQLSTATE and message shown. q12
// windows by processing time (proctime()), which no recomputation reproduces: its view is checked
// against what processing time guarantees instead (every bid counted once, aligned 10-second
// windows, every window within the wall-clock time of the run).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NEXMARK_QUERIES, QUERY_DIR, querySql, runNexmarkQuery } from '../../bench/nexmark.js';
import { canonical, runAndInspect, SMOKE } from './inspect-run.js';

const EVENTS = 10_000;

type Status = { readonly runs: true } | { readonly runs: false; readonly sqlstate: string; readonly message: string };

/** The README's table: query -> runs, or refused with `SQLSTATE` and message. */
function readmeStatus(): Map<string, Status> {
  const statuses = new Map<string, Status>();
  for (const line of readFileSync(join(QUERY_DIR, 'README.md'), 'utf8').split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4 || !/^q\d+$/.test(cells[1]!)) continue;
    const status = cells.at(-2)!;
    const refused = /^refused: `(\w{5})` (.+)$/.exec(status);
    if (status === 'runs') statuses.set(cells[1]!, { runs: true });
    else if (refused !== null) statuses.set(cells[1]!, { runs: false, sqlstate: refused[1]!, message: refused[2]! });
    else throw new Error(`README: ${cells[1]} has the status ${JSON.stringify(status)}, neither "runs" nor "refused: \`SQLSTATE\` message"`);
  }
  return statuses;
}

const statuses = readmeStatus();

/** Runs `query` as the benchmark does and checks its view against the batch SELECT. */
async function checkQuery(query: string, parallelism: number): Promise<void> {
  const { select } = querySql(query);
  await runAndInspect({ query, events: EVENTS, ...SMOKE, ...(parallelism === 1 ? {} : { parallelism }) }, async (run) => {
    const view = await run(`SELECT * FROM nexmark_${query}`);
    const batch = await run(select);
    expect(view.length).toBeGreaterThan(0);
    expect(canonical(view)).toEqual(canonical(batch));
  });
}

/** Queries whose view depends on processing time: checked by `checkProcessingTime`, not by recompute. */
const PROCESSING_TIME_QUERIES = new Set(['q12']);
const TEN_SECONDS_MICROS = 10_000_000;

/** A timestamptz value as microseconds since 1970 (the engine's own form). */
function micros(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  throw new Error(`not a timestamptz value: ${JSON.stringify(value)}`);
}

/** q12: bids per bidder per 10 seconds of processing time, checked against the clock read around the run. */
async function checkProcessingTime(query: string, parallelism: number): Promise<void> {
  const beforeMicros = Date.now() * 1000;
  await runAndInspect({ query, events: EVENTS, ...SMOKE, ...(parallelism === 1 ? {} : { parallelism }) }, async (run) => {
    const afterMicros = Date.now() * 1000;
    const view = await run(`SELECT bidder, bid_count, starttime, endtime FROM nexmark_${query}`);
    const [[bids]] = (await run('SELECT count(*) FROM bid')) as [[bigint]];
    const perBidder = new Map<string, bigint>();
    for (const [bidder, count] of await run('SELECT bidder, count(*) FROM bid GROUP BY bidder')) perBidder.set(String(bidder), count as bigint);
    expect(view.length).toBeGreaterThan(0);
    let total = 0n;
    const viewPerBidder = new Map<string, bigint>();
    for (const [bidder, count, start, end] of view) {
      const startMicros = micros(start);
      expect(micros(end) - startMicros).toBe(TEN_SECONDS_MICROS);
      expect(startMicros % TEN_SECONDS_MICROS).toBe(0);
      // Every bid's processing time lies in [before, after], so its window starts in that span's windows.
      expect(startMicros).toBeGreaterThanOrEqual(beforeMicros - (beforeMicros % TEN_SECONDS_MICROS));
      expect(startMicros).toBeLessThanOrEqual(afterMicros);
      total += count as bigint;
      viewPerBidder.set(String(bidder), (viewPerBidder.get(String(bidder)) ?? 0n) + (count as bigint));
    }
    expect(total).toBe(bids);
    expect(new Map([...viewPerBidder].sort())).toEqual(new Map([...perBidder].sort()));
    // The processing time of every row: within the run, and one value per batch of a chunk's rows.
    await run(`CREATE MATERIALIZED VIEW processed_times AS SELECT p_time, count(*) AS n FROM bid_processed GROUP BY p_time`);
    const times = await run('SELECT p_time, n FROM processed_times');
    expect(times.length).toBeGreaterThan(0);
    for (const [time] of times) {
      expect(micros(time)).toBeGreaterThanOrEqual(beforeMicros);
      expect(micros(time)).toBeLessThanOrEqual(Date.now() * 1000);
    }
    expect(times.reduce((sum, [, n]) => sum + (n as bigint), 0n)).toBe(bids);
  });
}

describe('proctime()', () => {
  it('in a query is the statement time, the value of now()', async () => {
    await runAndInspect({ query: 'q0', events: 100, ...SMOKE }, async (run) => {
      const before = Date.now() * 1000;
      const [[proctime, now]] = (await run('SELECT proctime(), now()')) as [[unknown, unknown]];
      const after = Date.now() * 1000;
      expect(micros(proctime)).toBe(micros(now));
      expect(micros(proctime)).toBeGreaterThanOrEqual(before);
      expect(micros(proctime)).toBeLessThanOrEqual(after);
    });
  }, 120_000);

  it('is refused over a table, whose updates and deletes would need the processing time stored', async () => {
    await runAndInspect({ query: 'q0', events: 100, ...SMOKE }, async (run) => {
      await run('CREATE TABLE accounts (id int PRIMARY KEY, balance int)');
      const sql = 'CREATE MATERIALIZED VIEW touched AS SELECT id, proctime() AS at FROM accounts';
      const error = await run(sql).then(
        () => undefined,
        (caught: unknown) => caught as { code?: string; position?: number },
      );
      expect(error?.code).toBe('0A000');
      expect(error?.position).toBe(sql.indexOf('proctime()') + 1);
    });
  }, 120_000);
});

describe('nexmark queries (bench/nexmark/)', () => {
  it('has one file per query q0-q22 and the README gives each a status', () => {
    const files = readdirSync(QUERY_DIR).filter((name) => /^q\d+\.sql$/.test(name)).map((name) => name.slice(0, -4));
    expect(files.sort()).toEqual([...NEXMARK_QUERIES].sort());
    expect([...statuses.keys()]).toEqual(NEXMARK_QUERIES);
  });

  for (const query of NEXMARK_QUERIES) {
    const status = statuses.get(query);
    if (status === undefined) continue;
    if (status.runs && PROCESSING_TIME_QUERIES.has(query)) {
      it(`${query} runs: every bid counted once, in aligned 10-second windows of processing time within the run`, () => checkProcessingTime(query, 1), 120_000);
    } else if (status.runs) {
      it(`${query} runs: the view equals its query recomputed in batch, non-empty`, () => checkQuery(query, 1), 120_000);
    } else {
      it(`${query} is refused with ${status.sqlstate}`, async () => {
        const error = await runNexmarkQuery({ query, events: 100, barrierIntervalMs: 50 }).then(
          () => undefined,
          (caught: unknown) => caught as { code?: string; message?: string },
        );
        expect({ code: error?.code, message: error?.message }).toEqual({ code: status.sqlstate, message: status.message });
      }, 120_000);
    }
  }
});

// At --parallelism 2 the fragments of each plan (joins, aggregates, windows) run in worker threads
// (executor/stream/PARALLEL.md; the worker script is the build's: npm run build first).
describe('nexmark queries at --parallelism 2', () => {
  for (const query of NEXMARK_QUERIES) {
    if (statuses.get(query)?.runs !== true) continue;
    if (PROCESSING_TIME_QUERIES.has(query)) {
      it(`${query}: every bid counted once, in aligned 10-second windows of processing time within the run`, () => checkProcessingTime(query, 2), 120_000);
      continue;
    }
    it(`${query}: the view equals its query recomputed in batch`, () => checkQuery(query, 2), 120_000);
  }
});
