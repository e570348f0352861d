// --durability remote over a real server and s3rver: DML returns only once its epoch is in the
// object store, so after a SIGKILL and the loss of the whole data directory every acknowledged row
// comes back. The checkpoint interval is a minute: only the durability wait can have put the
// rows there in time.

import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToKillable, startOxbow } from '../support/server.js';
import { s3rverSuite, tableRows } from './support/s3rver-suite.js';

const suite = s3rverSuite('oxbow-remote-durability-');
const work = suite.work;

describe('--durability remote', () => {
  it('--durability remote: nothing acknowledged is lost with the disk', async () => {
    const url = `s3://oxbow/remote-${randomBytes(4).toString('hex')}`;
    const dataDir = join(work, 'remote-data');
    const args = ['--checkpoint-url', url, '--checkpoint-interval-ms', '60000', '--durability', 'remote'];
    let server = await startOxbow({ dataDir, args, env: suite.s3rver.env });
    let client = await connectToKillable(server);
    await client.query('create table t (id int primary key, v bigint)');
    const acknowledged = new Map<number, number>();
    for (let index = 0; index < 12; index++) {
      await client.query('insert into t values ($1, $2)', [index, index * 10]);
      acknowledged.set(index, index * 10);
    }
    await client.query('update t set v = v + 1 where id < 10');
    for (let index = 0; index < 10; index++) acknowledged.set(index, index * 10 + 1);
    await server.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    server = await startOxbow({ dataDir, args, env: suite.s3rver.env });
    client = await connectToKillable(server);
    expect(await tableRows(client)).toEqual(acknowledged);
    await client.end();
    await server.stop();
  });
});
