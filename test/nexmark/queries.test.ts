// Every Nexmark query of bench/nexmark/ against the table in bench/nexmark/README.md of what oxbow
// runs. A query marked "runs" is run as the benchmark runs it (an in-process engine, the generator
// sources over 10,000 events, two splits, 50 ms barriers): its view must be non-empty and equal
// its query recomputed as a batch SELECT over the same events in the sources' tables (incremental
// equals recompute). A query marked "refused" must fail with the SQLSTATE and message shown.
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

describe('nexmark queries (bench/nexmark/)', () => {
  it('has one file per query q0-q22 and the README gives each a status', () => {
    const files = readdirSync(QUERY_DIR).filter((name) => /^q\d+\.sql$/.test(name)).map((name) => name.slice(0, -4));
    expect(files.sort()).toEqual([...NEXMARK_QUERIES].sort());
    expect([...statuses.keys()]).toEqual(NEXMARK_QUERIES);
  });

  for (const query of NEXMARK_QUERIES) {
    const status = statuses.get(query);
    if (status === undefined) continue;
    if (status.runs) {
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
    it(`${query}: the view equals its query recomputed in batch`, () => checkQuery(query, 2), 120_000);
  }
});
