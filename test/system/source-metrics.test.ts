// Source throughput in the operator's view, over the wire against a real server process: a
// built-in Nexmark generator source (deterministic: of N events, 46 in 50 are bids) read by a
// view; once every event is committed, the source's row counter on /metrics, the view's input
// counter, the dataflow's scan and the source's own rows in oxbow_catalog.state_size agree with
// the rows a plain SELECT counts. A server of its own: the source commits epochs in the
// background, which would disturb operator-view.test.ts's exact counts.

import { request } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { waitForCommittedOffsets } from '../support/source-offsets.js';

const EVENTS = 1000;
const BID_COLUMNS = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';

let oxbow: OxbowServer;
let metricsPort: number;
let client: pg.Client;

function metrics(): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: metricsPort, path: '/metrics' }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

function sample(text: string, line: RegExp): number {
  const found = text.split('\n').filter((candidate) => line.test(candidate));
  expect(found, String(line)).toHaveLength(1);
  return Number(found[0]!.split(' ').at(-1));
}

beforeAll(async () => {
  oxbow = await startOxbow({ args: ['--metrics-port', '0', '--barrier-interval-ms', '100'] });
  metricsPort = Number(/metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(oxbow.stderr())![1]);
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
}, 90_000);

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
});

describe('source throughput', () => {
  it('counts a generator source rows on /metrics, in the view input and the dataflow scan', async () => {
    await client.query(`CREATE SOURCE bid (${BID_COLUMNS}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${EVENTS}', nexmark.min.event.gap.in.ns = '0')`);
    await client.query('CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n FROM bid GROUP BY channel');
    await waitForCommittedOffsets(client, 'bid', EVENTS);
    const bids = Number((await client.query('SELECT count(*) AS n FROM bid')).rows[0].n);
    expect(bids).toBe((EVENTS / 50) * 46);
    expect(Number((await client.query('SELECT sum(n) AS n FROM per_channel')).rows[0].n)).toBe(bids);

    const text = await metrics();
    expect(sample(text, /^oxbow_source_rows_total\{source="public\.bid"\} /)).toBe(bids);
    // The view reads every bid: those committed before it existed through its backfill, the rest
    // as changes; its scan saw all of them either way.
    // (No sample at all while every bid came through the backfill.)
    const inputLines = text.split('\n').filter((line) => line.startsWith('oxbow_input_rows_total{relation="public.bid",kind="source"} '));
    expect(inputLines.length).toBeLessThanOrEqual(1);
    const input = inputLines.length === 0 ? 0 : Number(inputLines[0]!.split(' ').at(-1));
    const { rows: scan } = await client.query("SELECT rows_in FROM oxbow_catalog.dataflow WHERE view_name = 'per_channel' AND kind = 'StreamTableScan'");
    expect(Number(scan[0].rows_in)).toBe(bids);
    expect(input).toBeLessThanOrEqual(bids);
    const { rows: state } = await client.query("SELECT object_kind, purpose FROM oxbow_catalog.state_size WHERE object_name = 'bid'");
    expect(state).toEqual([{ object_kind: 'source', purpose: 'source positions' }]);
  });
});
