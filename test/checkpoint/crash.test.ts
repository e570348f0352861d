// The crash test, over real server processes and a real S3-compatible server (s3rver): load
// through a table while a materialized view runs, SIGKILL the server at random moments, 10 times,
// and restart. The moments are chosen by watching the checkpoint's phases (the server's
// OXBOW_CHECKPOINT_TRACE lines on stderr): each kill lands a few random milliseconds into a phase
// drawn at random (the cut, the uploads, the manifest write, retention's deletes) or between two
// checkpoints (where RocksDB compacts the files the last cut flushed), so every kind of moment is
// hit without idle waiting:
//
// - with the local data directory intact, every DML that returned success is there, and the
//   statement in flight at the kill is there entirely or not at all;
// - with the data directory deleted, the server restores the newest complete checkpoint from the
//   object store alone: its rows equal exactly the state at that checkpoint's epoch, read
//   independently from the killed server's own directory as of that epoch (time travel);
// - the view always equals its query recomputed over the table.
//
// --durability remote has its own file (remote-durability.test.ts).

import { randomBytes } from 'node:crypto';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../storage/object-store/s3-object-store.js';
import { decodeManifest } from '../../storage/checkpoint/manifest.js';
import { listCheckpointEpochs } from '../../storage/checkpoint/restore.js';
import { manifestKey } from '../../storage/checkpoint/manifest.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import { type } from '../../sql/types.js';
import { connectToKillable, startOxbow } from '../support/server.js';
import { S3RVER_CREDENTIALS } from './support/s3rver.js';
import { seededRandom } from '../support/seeded-random.js';
import { s3rverSuite, tableRows } from './support/s3rver-suite.js';

const suite = s3rverSuite('oxbow-crash-');
const work = suite.work;


async function expectViewMatchesQuery(client: pg.Client): Promise<void> {
  const view = await client.query('select g, n, total from mv order by g');
  const recomputed = await client.query('select id % 7 as g, count(*) as n, sum(v) as total from t group by id % 7 order by g');
  expect(view.rows).toEqual(recomputed.rows);
}

/** The state of table t as of `epoch`, read from a RocksDB directory directly (not through the restore). */
async function rowsAsOf(stateDir: string, epoch: bigint): Promise<Map<number, number>> {
  const store = openRocksStateStore({ dir: stateDir, memoryLimitBytes: 0 });
  try {
    const catalog = JSON.parse(new TextDecoder().decode(store.getMeta('catalog'))) as { relations: { id: number; name: string; kind: string }[] };
    const relation = catalog.relations.find((candidate) => candidate.name === 't' && candidate.kind === 'table')!;
    const table = store.table({ tableId: relation.id, columnTypes: [type('int4'), type('int8')], primaryKey: [0] });
    return new Map([...table.scan({ epoch })].map((row) => [row[0] as number, Number(row[1] as bigint)]));
  } finally {
    await store.close();
  }
}

describe('crash and recovery through checkpoints', () => {
  const seed = Number(process.env['OXBOW_CRASH_SEED'] ?? Date.now() % 100_000);

  // Each round starts a server process; on a loaded machine that alone can take seconds.
  it(`10 SIGKILLs at random moments, some with the data directory lost (seed ${seed})`, { timeout: 180_000 }, async () => {
    const next = seededRandom(seed); // the seed is in the test name, so a failing run can be replayed
    const prefix = `crash-${randomBytes(4).toString('hex')}`;
    const url = `s3://oxbow/${prefix}`;
    const remote = new S3ObjectStore({ bucket: 'oxbow', prefix, endpoint: suite.s3rver.endpoint, credentials: S3RVER_CREDENTIALS });
    const dataDir = join(work, 'data');
    const args = ['--checkpoint-url', url, '--checkpoint-interval-ms', '250'];
    const env = { ...suite.s3rver.env, OXBOW_CHECKPOINT_TRACE: '1' };
    let model = new Map<number, number>();
    /** The table after each acknowledged statement since the last restore: a checkpoint must be one of them. */
    let history: Map<number, number>[] = [new Map()];
    let nextId = 0;
    let remoteRestores = 0;

    let server = await startOxbow({ dataDir, args, env });
    let client = await connectToKillable(server);
    await client.query('create table t (id int primary key, v bigint)');
    await client.query('create materialized view mv as select id % 7 as g, count(*) as n, sum(v) as total from t group by id % 7');

    /** How many times the server's stderr has shown `checkpoint <phase>` so far. */
    const phaseCount = (phase: string): number => server.stderr().split(`oxbow: checkpoint ${phase} `).length - 1;
    /** Waits until `phase` has been entered more than `seen` times. */
    const untilPhase = async (phase: string, seen: number): Promise<void> => {
      for (const started = Date.now(); phaseCount(phase) <= seen; ) {
        if (Date.now() - started > 60_000) throw new Error(`no checkpoint ${phase} within 60 s; stderr:\n${server.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    };
    const moments = ['cut', 'upload', 'manifest', 'retention', 'between'] as const;

    for (let round = 0; round < 10; round++) {
      // Load until the kill: inserts of new ids and updates of old ones, one statement at a time.
      const moment = moments[Math.floor(next() * moments.length)]!;
      const delayMs = moment === 'between' ? Math.floor(next() * 200) : Math.floor(next() * 10);
      if (process.env['OXBOW_CRASH_DEBUG'] !== undefined) process.stderr.write(`round ${round} loading at ${Date.now() % 100000}, kill ${delayMs} ms into ${moment}\n`);
      let inFlight: Map<number, number> | undefined;
      let killed = false;
      const loseDisk = round % 3 === 2;
      const load = (async () => {
        while (!killed) {
          const changes = new Map<number, number>();
          for (let index = 0; index < 20; index++) changes.set(nextId++, round * 1000 + index);
          for (const [id] of [...model].slice(0, 5)) changes.set(id, (model.get(id) ?? 0) + 1);
          const values = [...changes].map(([id, v]) => `(${id}, ${v})`).join(', ');
          inFlight = changes;
          try {
            await client.query(`insert into t values ${values} on conflict (id) do update set v = excluded.v`);
          } catch {
            return; // killed mid-statement: its outcome is unknown
          }
          for (const [id, v] of changes) model.set(id, v);
          history.push(new Map(model));
          inFlight = undefined;
        }
      })();
      // Losing the disk is only a test of the object store once this process has put a checkpoint
      // there (so the newest one holds this round's writes).
      if (loseDisk) await untilPhase('complete', 0);
      await untilPhase(moment === 'between' ? 'complete' : moment, phaseCount(moment === 'between' ? 'complete' : moment));
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      await server.kill('SIGKILL');
      killed = true;
      await load;
      if (process.env['OXBOW_CRASH_DEBUG'] !== undefined) process.stderr.write(`round ${round} killed at ${Date.now() % 100000}\n`);
      await client.end().catch(() => undefined);

      if (loseDisk) {
        // What the newest complete checkpoint holds, read from the dead server's own directory.
        const epochs = await listCheckpointEpochs(remote);
        const newest = epochs[0]!;
        decodeManifest(manifestKey(newest), await remote.getBytes(manifestKey(newest)));
        const copy = join(work, `copy-${round}`);
        cpSync(join(dataDir, 'state'), copy, { recursive: true });
        const expected = await rowsAsOf(copy, newest);
        rmSync(dataDir, { recursive: true, force: true });
        server = await startOxbow({ dataDir, args, env });
        client = await connectToKillable(server);
        const restored = await tableRows(client);
        expect(restored).toEqual(expected);
        // The checkpoint is the table after some statement: whole statements, nothing invented.
        const withInFlight = new Map(model);
        for (const [id, v] of inFlight ?? []) withInFlight.set(id, v);
        const sameAs = (candidate: Map<number, number>): boolean => candidate.size === restored.size && [...candidate].every(([id, v]) => restored.get(id) === v);
        expect([...history, withInFlight].some(sameAs)).toBe(true);
        model = restored;
        history = [new Map(model)];
        remoteRestores++;
      } else {
        server = await startOxbow({ dataDir, args, env });
        client = await connectToKillable(server);
        const after = await tableRows(client);
        const applied = inFlight !== undefined && [...inFlight].every(([id, v]) => after.get(id) === v);
        const expected = new Map(model);
        if (applied) for (const [id, v] of inFlight!) expected.set(id, v);
        expect(after).toEqual(expected); // nothing acknowledged lost, the in-flight statement all or nothing
        model = expected;
        history.push(new Map(model));
      }
      await expectViewMatchesQuery(client);
    }
    expect(remoteRestores).toBe(3);
    await client.end();
    await server.stop();
    remote.close();
  });
});
