// COPY FROM STDIN of a large text stream into a table that a materialized view reads, against a
// real oxbow server process: the COPY's time (Query to CommandComplete, over the wire) and the
// server's peak RSS (VmHWM) with its RSS before the COPY. `--compare DIR` runs another checkout's
// server (DIR/dist/bin/oxbow.js, built; several: DIR,DIR) alternately with this one, side by side
// in one run, each named by its folder.
//
//   npm run build && npm run bench -- copy [--rows 1000000] [--rounds 2] [--compare /tmp/base] [--existing 100000]
//
// The table: (id int primary key, k int, v text), the view: count(*) and sum(id) per k over 1,000
// groups. Lines are `id\tk\tname-id`, sent in CopyData messages of about 64 KiB. `--existing N`
// commits N rows (ids -N..-1) first, so the COPY's duplicate-key check cannot answer from an
// empty table: each new id is checked against the stored rows (below them all: the key bound).

import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { BENCH_SCALE, flag, milliseconds, reporter } from './support/harness.js';
import { startServerProcess } from './support/server-process.js';

const report = reporter('copy');
const rows = Number(flag('--rows') ?? Math.round(1_000_000 * BENCH_SCALE));
const rounds = Number(flag('--rounds') ?? 1);
const compare = flag('--compare');
const existing = Number(flag('--existing') ?? 0);
const here = dirname(fileURLToPath(import.meta.url));
const servers: { readonly name: string; readonly entry: string }[] = [{ name: 'head', entry: join(here, '..', 'bin', 'oxbow.js') }];
// --compare DIR[,DIR...]: each checkout named by its folder's last component.
for (const dir of (compare ?? '').split(',').filter((each) => each !== '').reverse()) servers.unshift({ name: basename(dir), entry: resolve(dir, 'dist', 'bin', 'oxbow.js') });

/** A /proc/PID/status field in bytes (VmRSS, VmHWM). */
function memoryOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/** Reads backend messages until one of type `type`; returns the ErrorResponse text if one came first. */
function waitFor(socket: Socket, state: { buffer: Buffer }, type: string): Promise<void> {
  return new Promise((resolveWait, reject) => {
    const scan = (): void => {
      for (;;) {
        const buffer = state.buffer;
        if (buffer.length < 5 || buffer.length < 1 + buffer.readInt32BE(1)) return;
        const length = buffer.readInt32BE(1);
        const kind = String.fromCharCode(buffer[0]!);
        const payload = buffer.subarray(5, 1 + length);
        state.buffer = buffer.subarray(1 + length);
        if (kind === 'E') {
          socket.off('data', onData);
          reject(new Error(`COPY failed: ${payload.toString('utf8').replace(/\0/g, ' ')}`));
          return;
        }
        if (kind === type) {
          socket.off('data', onData);
          resolveWait();
          return;
        }
      }
    };
    const onData = (chunk: Buffer): void => {
      state.buffer = Buffer.concat([state.buffer, chunk] as unknown as Uint8Array[]);
      scan();
    };
    socket.on('data', onData);
    scan();
  });
}

/** COPY t FROM STDIN of `count` rows over a raw connection; returns its milliseconds. */
async function copyRows(port: number, count: number): Promise<number> {
  const socket = await new Promise<Socket>((resolveSocket, reject) => {
    const opened = connect(port, '127.0.0.1', () => resolveSocket(opened));
    opened.once('error', reject);
  });
  const state = { buffer: Buffer.alloc(0) };
  socket.write(serialize.startup({ user: 'oxbow', database: 'oxbow' }) as unknown as Uint8Array);
  await waitFor(socket, state, 'Z');
  const started = process.hrtime.bigint();
  socket.write(serialize.query('copy t from stdin') as unknown as Uint8Array);
  await waitFor(socket, state, 'G');
  let text = '';
  for (let id = 1; id <= count; id++) {
    text += `${id}\t${id % 1000}\tname-${id}\n`;
    if (text.length >= 65_536 || id === count) {
      const flushed = socket.write(serialize.copyData(Buffer.from(text)) as unknown as Uint8Array);
      text = '';
      if (!flushed) await new Promise((resolveDrain) => socket.once('drain', resolveDrain));
    }
  }
  socket.write(serialize.copyDone() as unknown as Uint8Array);
  await waitFor(socket, state, 'Z');
  const elapsed = milliseconds(started);
  socket.end();
  return elapsed;
}

for (let round = 0; round < rounds; round++) {
  for (const { name, entry } of servers) {
    const server = await startServerProcess(entry, 'copy', ['--memory-limit', '256MB']);
    try {
      const client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'oxbow', database: 'oxbow' });
      await client.connect();
      await client.query('create table t (id int primary key, k int, v text)');
      if (existing > 0) await client.query(`insert into t select -i, i % 1000, 'old-' || i from generate_series(1, ${existing}) i`);
      await client.query('create materialized view per_k as select k, count(*) as n, sum(id) as total from t group by k');
      const before = memoryOf(server.child.pid!, 'VmRSS');
      const elapsed = await copyRows(server.port, rows);
      const peak = memoryOf(server.child.pid!, 'VmHWM');
      const check = await client.query('select sum(n)::text as n from per_k');
      if (check.rows[0]?.n !== String(rows + existing)) throw new Error(`the view counts ${check.rows[0]?.n} rows, not ${rows + existing}`);
      await client.end();
      report(`${name} copy ${rows} rows${existing > 0 ? ` after ${existing}` : ''}`, elapsed, 'ms');
      report(`${name} rows/s`, rows / (elapsed / 1000), 'rows/s');
      report(`${name} rss before copy`, before / 2 ** 20, 'MiB');
      report(`${name} peak rss`, peak / 2 ** 20, 'MiB');
    } finally {
      await server.stop();
    }
  }
}
