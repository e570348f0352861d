// A PostgreSQL sink target behind a fault proxy (test/support/fault-proxy.ts) while a writer keeps
// inserting into the sink's table: the target hangs (the proxy holds every byte), connections are
// cut with an RST mid-transfer, every byte arrives 2 s late (past the sink's 1.5 s query
// deadline), and the PostgreSQL processes are stopped with SIGSTOP. Each time: oxbow keeps
// running, the failed rounds are rows of oxbow_catalog.sink_errors, a CREATE SINK against the hung
// target fails within its connect deadline with 08001, and once the fault clears the target
// catches up by itself. At the end the append-only target holds every acknowledged row exactly
// once (counted by id) and the view equals its query.

import { describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';
import { startPostgres } from '../support/postgres.js';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';
import { eventually, expectAlive, expectRefusedQuickly, expectViewEqualsQuery, report, signalTree, sleep, startWriter, useFaultRig } from './support.js';

const rig = useFaultRig(async () => {
  const postgres = await startPostgres();
  await postgres.query('create table acked_log (id int not null, v bigint)');
  return {
    proxy: await FaultProxy.start(postgres.port),
    postgres,
    get pid() {
      return postgres.pid;
    },
    stop: () => postgres.stop(),
  };
}, ['--metrics-port', '0']);

function sinkOptions(table: string): string {
  // localhost: the name lookup is part of each connection (and of its connect deadline).
  return `connector = 'postgres', hostname = 'localhost', port = '${rig.target.proxy.port}', user = 'postgres', database = 'postgres', table = '${table}', connect_timeout_ms = '1000', query_timeout_ms = '1500'`;
}

async function sinkErrors(): Promise<{ error: string; attempt: number }[]> {
  return (await rig.client.query<{ error: string; attempt: number }>("select error, attempt from oxbow_catalog.sink_errors where sink_name = 's_pg' order by error_at")).rows;
}

/** The ids the target holds, each as often as it holds it. */
async function targetIds(): Promise<number[]> {
  return (await rig.target.postgres.query('select id from acked_log order by id')).rows.map((row) => Number(row[0]));
}

describe('PostgreSQL sink target faults', () => {
  it('survives a hang, resets, latency and SIGSTOP; every acknowledged row lands once', { timeout: 150_000 }, async () => {
    await rig.client.query('create table src (id int primary key, v bigint)');
    await rig.client.query('create materialized view totals as select count(*) as n, sum(v) as s, max(id) as top from src');
    await rig.client.query(`create sink s_pg from src with (${sinkOptions('acked_log')}, type = 'append-only')`);
    const writer = startWriter((id) => rig.client.query('insert into src values ($1, $2)', [id, id * 10]));
    await eventually('the first rows in the target', 20_000, async () => ((await targetIds()).length > 0 ? true : undefined));

    const faults: { name: string; inject(): void; clear(): void; probeCreate: boolean; error: RegExp }[] = [
      { name: 'hang', inject: () => rig.target.proxy.hang(), clear: () => rig.target.proxy.resume(), probeCreate: true, error: /timeout|timed out|terminated/i },
      { name: 'reset', inject: () => rig.target.proxy.reset(200), clear: () => rig.target.proxy.resume(), probeCreate: false, error: /ECONNRESET|terminated|closed|ended|timeout/i },
      { name: 'latency', inject: () => rig.target.proxy.latency(2000), clear: () => rig.target.proxy.pass(), probeCreate: false, error: /timeout|timed out|terminated/i },
      { name: 'sigstop', inject: () => signalTree(rig.target.postgres.pid, 'SIGSTOP'), clear: () => signalTree(rig.target.postgres.pid, 'SIGCONT'), probeCreate: true, error: /timeout|timed out|terminated/i },
    ];
    for (const fault of faults) {
      const before = (await sinkErrors()).length;
      fault.inject();
      if (fault.probeCreate) await expectRefusedQuickly(rig.client, `create sink s_probe from src with (${sinkOptions('acked_log')}, type = 'append-only')`, '08001', /cannot connect to PostgreSQL|timeout/i);
      const errors = await eventually(`a sink_errors row for the ${fault.name}`, 30_000, async () => {
        const rows = await sinkErrors();
        return rows.length > before ? rows.slice(before) : undefined;
      });
      expect(errors.map((row) => row.error).join('\n')).toMatch(fault.error);
      const status = await rig.client.query<{ trouble: string | null }>("select trouble from oxbow_catalog.sink_status where sink_name = 's_pg'");
      expect(status.rows[0]?.trouble ?? '(none)').not.toBe('(none)');
      // The same on /metrics: the sink is retrying.
      const metrics = (await httpGet(metricsPortOf(rig.oxbow), '/metrics')).body;
      expect(metrics).toMatch(/^oxbow_sink_trouble\{sink="public\.s_pg",connector="postgres"\} 1$/m);
      expect(Number(/^oxbow_sink_errors_total\{sink="public\.s_pg",connector="postgres"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(before);
      await sleep(1000);
      expectAlive(rig.oxbow);

      const ackedAtClear = writer.acked.length;
      const cleared = Date.now();
      fault.clear();
      await eventually(`the target caught up after the ${fault.name}`, 60_000, async () => ((await targetIds()).length >= ackedAtClear ? true : undefined));
      report(`postgres_sink_${fault.name}_recovery`, Date.now() - cleared, 'ms');
    }
    await writer.stop();

    const acked = writer.acked;
    const landed = await eventually('every acknowledged row in the target', 60_000, async () => {
      const ids = await targetIds();
      return ids.length >= acked.length ? ids : undefined;
    });
    const counts = new Map<number, number>();
    for (const id of landed) counts.set(id, (counts.get(id) ?? 0) + 1);
    const lost = acked.filter((id) => !counts.has(id));
    const duplicated = [...counts.values()].filter((count) => count > 1).length;
    expect(lost).toEqual([]);
    expect(duplicated).toBe(0);
    expect(landed.length).toBe(acked.length);
    report('postgres_sink_acknowledged_rows', acked.length, 'rows');
    report('postgres_sink_lost', lost.length, 'rows');
    report('postgres_sink_duplicates', duplicated, 'rows');
    await expectViewEqualsQuery(rig.client, 'totals', 'select count(*) as n, sum(v) as s, max(id) as top from src');
    const status = await rig.client.query<{ trouble: string | null }>("select trouble from oxbow_catalog.sink_status where sink_name = 's_pg'");
    expect(status.rows[0]!.trouble).toBeNull();
    expectAlive(rig.oxbow);
  });
});
