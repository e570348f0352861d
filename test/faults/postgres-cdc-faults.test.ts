// A postgres-cdc upstream behind a fault proxy while a writer keeps inserting and updating
// upstream: the replication connection hangs (the proxy holds every byte: only the stream's
// keepalive deadline notices), connections are cut with an RST mid-stream, every byte arrives 3 s
// late, and the PostgreSQL processes are stopped with SIGSTOP. Each time: oxbow keeps running,
// the trouble is a row of oxbow_catalog.source_errors, CREATE TABLE against the hung upstream
// fails within its connect deadline with 08001, and once the fault clears the table catches up by
// itself from the committed offset. At the end the oxbow table equals the upstream table (every
// committed upstream write, once: the key is the primary key and every version is checked) and the
// view equals its query.

import { describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';
import { CDC_PASSWORD, shopClient, startUpstream, textRows } from '../postgres-cdc/harness.js';
import { eventually, expectAlive, expectRefusedQuickly, expectViewEqualsQuery, report, signalTree, sleep, startWriter, useFaultRig } from './support.js';

const rig = useFaultRig(async () => {
  const upstream = await startUpstream();
  const shop = await shopClient(upstream);
  await shop.query('create table events (id int primary key, v bigint not null)');
  return {
    proxy: await FaultProxy.start(upstream.port),
    upstream,
    shop,
    get pid() {
      return upstream.pid;
    },
    async stop() {
      await shop.end().catch(() => undefined);
      await upstream.stop();
    },
  };
}, []);

function cdcOptions(table: string): string {
  // localhost: the name lookup is part of each connection (and of its connect deadline).
  return `WITH (connector = 'postgres-cdc', hostname = 'localhost', port = '${rig.target.proxy.port}', username = 'cdc', password = '${CDC_PASSWORD}',
    database.name = 'shop', schema.name = 'public', table.name = '${table}', connect.timeout.ms = '1000', query.timeout.ms = '1500', keepalive.timeout.ms = '2000')`;
}

async function troubleRows(): Promise<string[]> {
  return (await rig.client.query<{ error: string }>("select error from oxbow_catalog.source_errors where source_name = 'events' and partition_id is null order by error_at")).rows.map((row) => row.error);
}

async function oxbowCount(): Promise<number> {
  return Number((await rig.client.query<{ n: string }>('select count(*) as n from events')).rows[0]!.n);
}

describe('postgres-cdc upstream faults', () => {
  it('survives a hang, resets, latency and SIGSTOP; the table equals upstream after each', { timeout: 170_000 }, async () => {
    await rig.client.query(`create table events (id int primary key, v bigint not null) ${cdcOptions('events')}`);
    await rig.client.query('create materialized view buckets as select id % 7 as b, count(*) as n, sum(v) as s from events group by id % 7');
    // An idle stream outlives its deadlines: asked for a keepalive at half of keepalive.timeout.ms,
    // and query.timeout.ms is no deadline on the stream. No trouble, no reconnection.
    await rig.target.shop.query('insert into events values (-1, 0)');
    await eventually('the first row in oxbow', 30_000, async () => ((await oxbowCount()) === 1 ? true : undefined));
    await sleep(5000);
    expect(await troubleRows()).toEqual([]);
    // Upstream writes: a new row, and every third time an update of an older one.
    const writer = startWriter(async (id) => {
      await rig.target.shop.query('insert into events values ($1, $2)', [id, id]);
      if (id % 3 === 0) await rig.target.shop.query('update events set v = v + 1000 where id = $1', [id - 1]);
    });
    await eventually('the first rows in oxbow', 30_000, async () => ((await oxbowCount()) > 0 ? true : undefined));

    // A stream that stops moving is caught by its keepalive deadline (nothing else would notice).
    const silent = /keepalive\.timeout\.ms|query\.timeout\.ms/;
    const faults: { name: string; inject(): void; clear(): void; probeCreate: boolean; error: RegExp }[] = [
      { name: 'hang', inject: () => rig.target.proxy.hang(), clear: () => rig.target.proxy.resume(), probeCreate: true, error: silent },
      { name: 'reset', inject: () => rig.target.proxy.reset(300), clear: () => rig.target.proxy.resume(), probeCreate: false, error: /connection to PostgreSQL (lost|closed)|ECONNRESET|replication stream ended|no answer within/ },
      { name: 'latency', inject: () => rig.target.proxy.latency(3000), clear: () => rig.target.proxy.pass(), probeCreate: false, error: silent },
      { name: 'sigstop', inject: () => signalTree(rig.target.upstream.pid, 'SIGSTOP'), clear: () => signalTree(rig.target.upstream.pid, 'SIGCONT'), probeCreate: true, error: silent },
    ];
    for (const fault of faults) {
      const before = (await troubleRows()).length;
      fault.inject();
      if (fault.probeCreate) await expectRefusedQuickly(rig.client, `create table probe (id int primary key, v bigint not null) ${cdcOptions('events')}`, '08001', /no answer within 1000 ms/);
      const errors = await eventually(`a source_errors row for the ${fault.name}`, 30_000, async () => {
        const rows = await troubleRows();
        return rows.length > before ? rows.slice(before) : undefined;
      });
      expect(errors.join('\n')).toMatch(fault.error);
      await sleep(500);
      expectAlive(rig.oxbow);

      const cleared = Date.now();
      fault.clear();
      // Everything committed upstream by the time the fault cleared (the writer may have waited on a stopped server).
      await sleep(50);
      const atClear = writer.acked.length;
      await eventually(`oxbow caught up after the ${fault.name}`, 60_000, async () => ((await oxbowCount()) >= atClear ? true : undefined));
      report(`postgres_cdc_${fault.name}_recovery`, Date.now() - cleared, 'ms');
    }
    await writer.stop();

    const want = await textRows(rig.target.shop, 'select id, v from events');
    await eventually('the oxbow table equal to upstream', 60_000, async () => ((await textRows(rig.client, 'select id, v from events')).join('\n') === want.join('\n') ? true : undefined));
    const got = new Set(await textRows(rig.client, 'select id, v from events'));
    report('postgres_cdc_committed_upstream_rows', want.length, 'rows');
    report('postgres_cdc_lost', want.filter((line) => !got.has(line)).length, 'rows');
    await expectViewEqualsQuery(rig.client, 'buckets', 'select id % 7 as b, count(*) as n, sum(v) as s from events group by id % 7');
    expectAlive(rig.oxbow);
  });
});
