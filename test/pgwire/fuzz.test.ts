// A fuzzer for the connection state machine (TigerBeetle's habit): random sequences of valid,
// malformed and out-of-place frontend messages. Whatever is sent, the server either closes that
// connection after a FATAL error or stays in step: a final CopyFail + Sync + ROLLBACK + a query
// is answered with that query's row and ReadyForQuery. Every reply parses as well-formed
// messages, and a fresh client is served after each run. A failure prints its seed and path: keep
// them in the assert options below ({ seed, path }) to replay it.
import fc from 'fast-check';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectReady, startDoubleServer, types, type DoubleServer } from './harness.js';
import { int32, message, RawClient, type BackendMessage } from './raw-client.js';

let server: DoubleServer;

beforeAll(async () => {
  server = await startDoubleServer({ maxMessageBytes: 4096 });
});
afterAll(async () => {
  await server?.stop();
});

const statementText = fc.constantFrom('select 1', 'rows 3', 'fail 22012', 'notice', 'copyin', 'copyout 2', 'begin', 'rollback', 'commit', 'echo int4', 'syntax', 'empty', '');
const name = fc.constantFrom('', 'a', 'b');

const frontendMessage: fc.Arbitrary<Buffer> = fc.oneof(
  statementText.map((text) => serialize.query(text)),
  fc.tuple(name, statementText).map(([statement, text]) => serialize.parse({ name: statement, text })),
  fc.tuple(name, name, fc.array(fc.constantFrom('1', 'x', null), { maxLength: 2 })).map(([portal, statement, values]) => serialize.bind({ portal, statement, values })),
  fc.tuple(fc.constantFrom<'S' | 'P'>('S', 'P'), name).map(([type, target]) => serialize.describe({ type, name: target })),
  fc.tuple(name, fc.integer({ min: 0, max: 3 })).map(([portal, rows]) => serialize.execute({ portal, rows })),
  fc.tuple(fc.constantFrom<'S' | 'P'>('S', 'P'), name).map(([type, target]) => serialize.close({ type, name: target })),
  fc.constant(serialize.sync()),
  fc.constant(serialize.flush()),
  fc.string({ maxLength: 20 }).map((text) => serialize.copyData(Buffer.from(text))),
  fc.constant(serialize.copyDone()),
  fc.constant(serialize.copyFail('fuzz')),
  // A known or unknown type with a random body (malformed payloads, unknown types).
  fc.tuple(fc.constantFrom('Q', 'P', 'B', 'D', 'E', 'C', 'd', 'f', 'H', 'S', 'X', 'z', '@'), fc.uint8Array({ maxLength: 40 })).map(([type, body]) =>
    type === 'X' ? message('z', Buffer.from(body)) : message(type, Buffer.from(body)),
  ),
  // A header announcing more than the 4096-byte limit.
  fc.constant(Buffer.concat([Buffer.from('Q'), int32(1_000_000)] as unknown as Uint8Array[])),
);

class StuckError extends Error {}

/** A wait with a limit, so a hang shows up as a failing (and shrunk) case instead of a timeout. */
async function withTimeout<T>(promise: Promise<T>, limitMs: number, describeStuck: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StuckError(describeStuck())), limitMs);
  });
  try {
    return await Promise.race([promise, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

describe('connection state machine fuzzing', () => {
  it('stays in step or closes cleanly, whatever the client sends', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(frontendMessage, { maxLength: 25 }), async (messages) => {
        const { client } = await connectReady(server.port);
        // The tail: end any COPY, end any skip-until-Sync, end any (failed) transaction block, then a
        // query whose answer is recognisable.
        client.send(...messages, serialize.copyFail('end of fuzz'), serialize.sync(), serialize.query('rollback'), serialize.query('select 424242'));
        const received: BackendMessage[] = [];
        let closed = false;
        for (;;) {
          let next: BackendMessage;
          try {
            next = await withTimeout(client.readMessage(), 5000, () => `no answer; received so far: ${types(received)}`);
          } catch (error) {
            if (error instanceof StuckError) throw error;
            closed = true;
            break;
          }
          received.push(next);
          const count = received.length;
          // The final query's answer: DataRow "424242", CommandComplete, ReadyForQuery.
          if (next.type === 'Z' && count >= 3 && types(received.slice(count - 3)) === 'DCZ' && received[count - 3]!.payload.toString('utf8', 6) === '424242') break;
        }
        if (closed) {
          // Closed only after a FATAL error (never silently).
          const last = received.at(-1);
          expect(last?.type).toBe('E');
          expect(last!.payload.toString('utf8')).toContain('FATAL');
        }
        client.socket.destroy();
      }),
      { numRuns: 150 },
    );
    // And the server still serves a fresh client.
    const { client } = await connectReady(server.port);
    client.send(serialize.query('select 7'));
    expect(types(await client.readUntil('Z'))).toBe('TDCZ');
    client.end();
  });

  it('random bytes before startup: an answer (N or a FATAL error), or a wait for more; never a crash', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.boolean(), async (bytes, lengthPrefixed) => {
        const client = await RawClient.connect(server.port);
        const body = Buffer.from(bytes);
        // Half the cases carry a plausible length prefix so they reach the packet parser.
        client.send(lengthPrefixed ? Buffer.concat([int32(body.length + 4), body] as unknown as Uint8Array[]) : body);
        client.end();
        await client.closedPromise;
      }),
      { numRuns: 150 },
    );
    // The server still serves a fresh client.
    const { client } = await connectReady(server.port);
    client.send(serialize.query('select 7'));
    expect(types(await client.readUntil('Z'))).toBe('TDCZ');
    client.end();
  });
});
