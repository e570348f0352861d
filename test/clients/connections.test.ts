// The real server process under hostile or heavy load: 200 clients at once (100 served, the rest
// told 53300), garbage and oversized messages, a client that vanishes mid-result; afterwards the
// server still serves everyone.
import { serialize } from 'pg-protocol';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { fields, int32, RawClient } from '../pgwire/raw-client.js';

let oxbow: OxbowServer;

beforeAll(async () => {
  oxbow = await startOxbow();
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
});

async function stillServes(): Promise<void> {
  const client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
  expect((await client.query('select 1 + 1 as two')).rows).toEqual([{ two: 2 }]);
  await client.end();
}

describe('the server process under load and bad input', () => {
  it('200 connections at once: 100 served, 100 refused with 53300, then business as usual', async () => {
    const attempts = await Promise.allSettled(
      Array.from({ length: 200 }, async () => {
        const client = new pg.Client({ connectionString: oxbow.url });
        await client.connect();
        return client;
      }),
    );
    const connected = attempts.flatMap((attempt) => (attempt.status === 'fulfilled' ? [attempt.value] : []));
    const refused = attempts.flatMap((attempt) => (attempt.status === 'rejected' ? [attempt.reason as { code?: string }] : []));
    expect(connected.length).toBe(100);
    expect(refused.map((reason) => reason.code)).toEqual(Array.from({ length: 100 }, () => '53300'));
    const answers = await Promise.all(connected.map((client, i) => client.query({ text: 'select $1::int as i', values: [i] })));
    answers.forEach((answer, i) => expect(answer.rows).toEqual([{ i }]));
    await Promise.all(connected.map((client) => client.end()));
    await stillServes();
  });

  it('garbage, an oversized message and a vanishing client do not disturb the others', async () => {
    const survivor = new pg.Client({ connectionString: oxbow.url });
    await survivor.connect();

    const garbage = await RawClient.connect(oxbow.port);
    garbage.socket.write('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello, not PostgreSQL');
    const garbageReply = await garbage.readToEnd();
    expect(fields(garbageReply[0]!).get('C')).toBe('08P01');

    const oversized = await RawClient.connect(oxbow.port);
    oversized.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    await oversized.readUntil('Z');
    oversized.send(Buffer.concat([Buffer.from('Q'), int32(2_000_000_000)] as unknown as Uint8Array[]));
    const oversizedReply = await oversized.readToEnd();
    expect(fields(oversizedReply.at(-1)!).get('C')).toBe('54000');

    const vanishing = await RawClient.connect(oxbow.port);
    vanishing.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    await vanishing.readUntil('Z');
    vanishing.send(serialize.query('select g, repeat(\'x\', 100) from generate_series(1, 200000) as g'));
    await vanishing.readMessage();
    vanishing.socket.destroy();

    expect((await survivor.query('select 40 + 2 as answer')).rows).toEqual([{ answer: 42 }]);
    await survivor.end();
    await stillServes();
  });
});
