// The built executable as a user runs it: --port 0 prints the real port in the ready line, the
// server answers, SIGTERM and SIGINT shut it down cleanly (clients are told 57P01, exit code 0),
// --password turns on SCRAM-SHA-256 for psql and pg, --metrics-port serves Prometheus text.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { request } from 'node:http';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startOxbow } from '../support/server.js';

function psql(port: number, command: string, password?: string): { out: string; status: number | null } {
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', '-d', 'oxbow', '-At', '-c', command], {
    encoding: 'utf8',
    env: { ...process.env, PGPASSWORD: password ?? '', PGCONNECT_TIMEOUT: '10' },
    timeout: 30_000,
  });
  return { out: `${result.stdout}${result.stderr}`, status: result.status };
}

describe('oxbow server process', () => {
  it('--port 0: the ready line shows the real port; SIGTERM tells clients 57P01 and exits 0', async () => {
    const oxbow = await startOxbow();
    expect(oxbow.port).toBeGreaterThan(0);
    expect(oxbow.url).toBe(`postgres://oxbow@127.0.0.1:${oxbow.port}/oxbow`);
    expect(psql(oxbow.port, 'select 40 + 2')).toEqual({ out: '42\n', status: 0 });
    const client = new pg.Client({ connectionString: oxbow.url });
    await client.connect();
    const terminated = new Promise<{ code?: string }>((resolve) => client.on('error', (error) => resolve(error as { code?: string })));
    await oxbow.kill('SIGTERM');
    expect(oxbow.process.exitCode).toBe(0);
    expect((await terminated).code).toBe('57P01');
    await oxbow.stop();
  });

  it('SIGINT also shuts down cleanly, and a restart on the same data directory serves again', async () => {
    const first = await startOxbow();
    expect(psql(first.port, 'create table survives (id int primary key)').status).toBe(0);
    expect(psql(first.port, 'insert into survives values (1), (2)').status).toBe(0);
    await first.kill('SIGINT');
    expect(first.process.exitCode).toBe(0);
    const second = await startOxbow({ dataDir: first.dataDir });
    expect(psql(second.port, 'select count(*) from survives')).toEqual({ out: '2\n', status: 0 });
    await second.stop();
    await first.stop();
  });

  it('--password: SCRAM-SHA-256 for psql and pg; a wrong password is refused', async () => {
    const oxbow = await startOxbow({ password: 'correct horse' });
    expect(psql(oxbow.port, 'select 1', 'correct horse')).toEqual({ out: '1\n', status: 0 });
    const wrong = psql(oxbow.port, 'select 1', 'battery staple');
    expect(wrong.status).toBe(2);
    expect(wrong.out).toContain('password authentication failed for user "oxbow"');
    const client = new pg.Client({ host: '127.0.0.1', port: oxbow.port, user: 'oxbow', database: 'oxbow', password: 'correct horse' });
    await client.connect();
    expect((await client.query('select 7 as n')).rows).toEqual([{ n: 7 }]);
    await client.end();
    await oxbow.stop();
  });

  it('--metrics-port serves Prometheus text at /metrics', async () => {
    const oxbow = await startOxbow({ args: ['--metrics-port', '0'] });
    const match = /metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(oxbow.stderr());
    expect(match).not.toBeNull();
    const body = await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port: Number(match![1]), path: '/metrics' }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    expect(body).toMatch(/^# TYPE oxbow_connections gauge$/m);
    expect(body).toMatch(/^oxbow_connections \d+$/m);
    await oxbow.stop();
  });

  it('--keyed-source-workers on: EXPLAIN of Nexmark q4 at --parallelism 2 shows the workers generating its sources', async () => {
    const bid = 'auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar';
    const auction = 'id bigint, item_name varchar, description varchar, initial_bid bigint, reserve bigint, date_time timestamp, expires timestamp, seller bigint, category bigint, extra varchar';
    const q4 =
      'select q.category, avg(q.final) from (select a.id, a.category, max(b.price) as final from auction as a join bid as b on a.id = b.auction where b.date_time between a.date_time and a.expires group by a.id, a.category) as q group by q.category';
    const explain = async (args: string[]): Promise<string> => {
      const oxbow = await startOxbow({ args: ['--parallelism', '2', ...args] });
      const client = new pg.Client({ connectionString: oxbow.url });
      await client.connect();
      await client.query(`create source auction (${auction}) with (connector = 'nexmark', nexmark.table.type = 'Auction', nexmark.event.num = '100')`);
      await client.query(`create source bid (${bid}) with (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '100')`);
      const plan = (await client.query<{ 'QUERY PLAN': string }>(`explain create materialized view q4 as ${q4}`)).rows.map((row) => Object.values(row)[0]).join('\n');
      await client.end();
      await oxbow.stop();
      return plan;
    };
    const on = await explain(['--keyed-source-workers', 'on']);
    expect(on).toContain('StreamExchange dist by (auction) (2 workers, worker to worker)');
    expect(on).toContain('StreamSourceFragment bid split across 2 workers');
    expect(on).toContain('StreamSourceFragment auction split across 2 workers');
    const off = await explain([]);
    expect(off).toContain('StreamExchange dist by (auction) (2 workers)');
    expect(off).not.toContain('worker to worker');
  });

  it('--parallelism defaults to --cores, which defaults to the cores Node sees (SHOW oxbow_parallelism, oxbow_cores)', async () => {
    const show = async (options: Parameters<typeof startOxbow>[0]): Promise<string[]> => {
      const oxbow = await startOxbow(options);
      const client = new pg.Client({ connectionString: oxbow.url });
      await client.connect();
      const values: string[] = [];
      for (const name of ['oxbow_parallelism', 'oxbow_cores']) values.push(String(Object.values((await client.query(`show ${name}`)).rows[0] as object)[0]));
      await client.end();
      await oxbow.stop();
      return values;
    };
    const cores = String(availableParallelism());
    expect(await show({ defaultParallelism: true })).toEqual([cores, cores]);
    expect(await show({ args: ['--cores', '3'], defaultParallelism: true })).toEqual(['3', '3']);
    expect(await show({ args: ['--cores', '3', '--parallelism', '2'] })).toEqual(['2', '3']);
    // The test harness's own default: parallelism 1 unless a test names one.
    expect((await show({}))[0]).toBe('1');
  });

  it('a port already in use is a clear error, not a crash', async () => {
    const oxbow = await startOxbow();
    const clash = spawnSync(process.execPath, ['dist/bin/oxbow.js', '--port', String(oxbow.port), '--data-dir', `${oxbow.dataDir}-clash`], { encoding: 'utf8', timeout: 30_000 });
    expect(clash.status).toBe(1);
    expect(clash.stderr).toContain(`could not listen on 127.0.0.1:${oxbow.port}`);
    rmSync(`${oxbow.dataDir}-clash`, { recursive: true, force: true });
    await oxbow.stop();
  });
});
