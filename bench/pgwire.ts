// Wire protocol throughput. In-process: encoding DataRow messages (text and binary) for batches of
// rows, the pgwire hot path without any socket. Over the wire against the real server process
// (dist/bin/oxbow.js, fresh data directory): rows per second of a large SELECT read by a raw
// client, sequential simple-query round trips, and pipelined extended-protocol executions of one
// prepared statement, and COPY FROM STDIN. Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && node dist/bench/pgwire.js

import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serialize } from 'pg-protocol';
import type { ColumnDescription } from '../executor/engine/engine.js';
import { DEFAULT_EVAL_CONTEXT } from '../sql/functions.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { MessageWriter } from '../pgwire/message-writer.js';
import { columnEncoders, writeDataRow } from '../pgwire/value-codec.js';
import { reporter } from './support/harness.js';
import { startServerProcess } from './support/server-process.js';

const report = reporter('pgwire', 1);

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

// ---- in-process encoding

function encodeRowsPerSecond(columns: ColumnDescription[], formats: number[], rows: Row[]): { rowsPerSecond: number; megabytesPerSecond: number } {
  const encoders = columnEncoders(columns, formats, DEFAULT_EVAL_CONTEXT);
  const writer = new MessageWriter();
  // Warm-up: let the JIT optimise the row loop before measuring.
  const warmUp = process.hrtime.bigint();
  while (seconds(warmUp) < 0.5) {
    for (let i = 0; i < rows.length; i++) writeDataRow(writer, rows[i]!, encoders);
    writer.take();
  }
  let bytes = 0;
  let encoded = 0;
  const start = process.hrtime.bigint();
  while (seconds(start) < 2) {
    for (let i = 0; i < rows.length; i++) writeDataRow(writer, rows[i]!, encoders);
    bytes += writer.length;
    writer.take();
    encoded += rows.length;
  }
  const elapsed = seconds(start);
  return { rowsPerSecond: encoded / elapsed, megabytesPerSecond: bytes / elapsed / 1e6 };
}

const column = (name: string, columnType: ColumnDescription['type']): ColumnDescription => ({ name, type: columnType, tableOid: 0, columnNumber: 0 });
const simpleColumns = [column('id', type('int4')), column('name', type('text')), column('amount', type('int8')), column('ok', type('bool'))];
const simpleRows: Row[] = Array.from({ length: 1024 }, (_, i) => [i, `name number ${i}`, BigInt(i) * 1_000_003n, i % 2 === 0]);
for (const [label, formats] of [
  ['text', [0, 0, 0, 0]],
  ['binary', [1, 1, 1, 1]],
] as const) {
  const { rowsPerSecond, megabytesPerSecond } = encodeRowsPerSecond(simpleColumns, [...formats], simpleRows);
  report(`encode DataRow int4,text,int8,bool (${label})`, rowsPerSecond, 'rows/s');
  report(`encode DataRow int4,text,int8,bool (${label}) bytes`, megabytesPerSecond, 'MB/s');
}
const mixedColumns = [column('f', type('float8')), column('ts', type('timestamptz')), column('d', type('date'))];
const mixedRows: Row[] = Array.from({ length: 1024 }, (_, i) => [i * 1.25, 1_700_000_000_000_000 + i * 1_000_000, 19_000 + i]);
report('encode DataRow float8,timestamptz,date (text)', encodeRowsPerSecond(mixedColumns, [0, 0, 0], mixedRows).rowsPerSecond, 'rows/s');
report('encode DataRow float8,timestamptz,date (binary)', encodeRowsPerSecond(mixedColumns, [1, 1, 1], mixedRows).rowsPerSecond, 'rows/s');

// ---- over the wire

// dist/bench/pgwire.js: the repository root is two levels up.
const root = fileURLToPath(new URL('../../', import.meta.url));
const server = await startServerProcess(join(root, 'dist', 'bin', 'oxbow.js'), 'pgwire');
const port = server.port;

/** A raw client that counts backend messages by type until a given number of ReadyForQuery. */
class Counter {
  private pending: Buffer = Buffer.alloc(0);
  private readyNeeded = 0;
  private done: (() => void) | undefined;
  dataRows = 0;
  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
  }
  untilReady(count: number): Promise<void> {
    this.readyNeeded = count;
    return new Promise((resolveReady) => (this.done = resolveReady));
  }
  private receive(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk] as unknown as Uint8Array[]);
    let offset = 0;
    while (this.pending.length - offset >= 5) {
      const length = this.pending.readInt32BE(offset + 1);
      if (this.pending.length - offset < 1 + length) break;
      const messageType = this.pending[offset];
      if (messageType === 0x44) this.dataRows++;
      if (messageType === 0x45) console.error('bench: server error', this.pending.toString('utf8', offset + 5, offset + 1 + length));
      if (messageType === 0x5a && --this.readyNeeded === 0) this.done?.();
      offset += 1 + length;
    }
    this.pending = this.pending.subarray(offset);
  }
}

async function open(): Promise<Counter> {
  const socket = await new Promise<Socket>((resolveSocket) => {
    const created: Socket = connect(port, '127.0.0.1', () => resolveSocket(created));
  });
  socket.setNoDelay(true);
  const counter = new Counter(socket);
  const ready = counter.untilReady(1);
  socket.write(serialize.startup({ user: 'oxbow', database: 'oxbow' }) as unknown as Uint8Array);
  await ready;
  return counter;
}

const client = await open();
{
  const total = 1_000_000;
  const done = client.untilReady(1);
  const start = process.hrtime.bigint();
  client.socket.write(serialize.query(`select g, g::text from generate_series(1, ${total}) as g`) as unknown as Uint8Array);
  await done;
  report('large SELECT read by a raw client (int4, text)', client.dataRows / seconds(start), 'rows/s');
}
{
  const count = 2000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) {
    const done = client.untilReady(1);
    client.socket.write(serialize.query('select 1') as unknown as Uint8Array);
    await done;
  }
  const elapsed = seconds(start);
  report('sequential simple query round trips (select 1)', count / elapsed, 'queries/s');
  report('sequential simple query round trip latency', (elapsed / count) * 1e6, 'us');
}
{
  const prepared = client.untilReady(1);
  client.socket.write(Buffer.concat([serialize.parse({ name: 'bench', text: 'select $1::int + 1' }), serialize.sync()] as unknown as Uint8Array[]) as unknown as Uint8Array);
  await prepared;
  const count = 5000;
  const batch: Buffer[] = [];
  for (let i = 0; i < count; i++) batch.push(serialize.bind({ statement: 'bench', values: [String(i)] }), serialize.execute({}), serialize.sync());
  const done = client.untilReady(count);
  const start = process.hrtime.bigint();
  client.socket.write(Buffer.concat(batch as unknown as Uint8Array[]) as unknown as Uint8Array);
  await done;
  report('pipelined Bind/Execute/Sync of a prepared statement', count / seconds(start), 'queries/s');
}
{
  const created = client.untilReady(1);
  client.socket.write(serialize.query('create table bench_copy (id int primary key, label text)') as unknown as Uint8Array);
  await created;
  // COPY FROM STDIN as psql sends it: CopyData chunks of about 64 KiB, then CopyDone.
  const total = 200_000;
  const chunks: Buffer[] = [serialize.query('copy bench_copy from stdin')];
  let text = '';
  for (let i = 0; i < total; i++) {
    text += `${i}\tlabel ${i}\n`;
    if (text.length > 64 * 1024) {
      chunks.push(serialize.copyData(Buffer.from(text)));
      text = '';
    }
  }
  if (text !== '') chunks.push(serialize.copyData(Buffer.from(text)));
  chunks.push(serialize.copyDone());
  const done = client.untilReady(1);
  const start = process.hrtime.bigint();
  client.socket.write(Buffer.concat(chunks as unknown as Uint8Array[]) as unknown as Uint8Array);
  await done;
  report('COPY FROM STDIN (int4, text), 64 KiB CopyData chunks', total / seconds(start), 'rows/s');
}
client.socket.end();
await server.stop();
