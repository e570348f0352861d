// The fault proxy itself (test/support/fault-proxy.ts) against a loopback echo server: it
// forwards, delays, holds and releases, and cuts a connection with an RST after n bytes.

import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';

let echo: Server;
let echoPort = 0;
let proxy: FaultProxy;

beforeAll(async () => {
  echo = createServer((socket) => {
    socket.on('error', () => undefined); // the proxy's RST
    socket.pipe(socket);
  });
  echoPort = await new Promise<number>((resolve) => echo.listen(0, '127.0.0.1', () => resolve((echo.address() as { port: number }).port)));
  proxy = await FaultProxy.start(echoPort);
});

afterAll(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: proxy.port }, () => {
      socket.removeListener('error', reject);
      socket.on('error', () => undefined);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Sends `text` and collects what comes back until `bytes` arrived, the socket failed, or `ms` passed. */
function exchange(socket: Socket, text: string, bytes: number, ms: number): Promise<{ data: string; error: string | undefined; elapsedMs: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    let data = '';
    let error: string | undefined;
    const done = (): void => {
      clearTimeout(timer);
      socket.removeAllListeners('data');
      resolve({ data, error, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString();
      if (data.length >= bytes) done();
    });
    socket.once('error', (failure: NodeJS.ErrnoException) => {
      error = failure.code ?? failure.message;
      done();
    });
    socket.write(text);
  });
}

describe('fault proxy', () => {
  it('passes, delays, holds and releases in order', async () => {
    proxy.pass();
    const socket = await open();
    expect((await exchange(socket, 'hello', 5, 2000)).data).toBe('hello');
    proxy.latency(300);
    const late = await exchange(socket, 'slow', 4, 3000);
    expect(late.data).toBe('slow');
    expect(late.elapsedMs).toBeGreaterThanOrEqual(550); // both ways
    proxy.hang();
    const held = await exchange(socket, 'held', 4, 500);
    expect(held.data).toBe('');
    const released = exchange(socket, '', 4, 3000);
    proxy.resume();
    expect((await released).data).toBe('held');
    socket.destroy();
  });

  it('cuts a connection with an RST after n bytes, new ones too, and passes again after resume', async () => {
    proxy.reset(3);
    const socket = await open();
    const cut = await exchange(socket, 'abcdefgh', 8, 3000);
    expect(cut.error).toBe('ECONNRESET');
    expect(cut.data.length).toBeLessThan(8);
    proxy.resume();
    const again = await open();
    expect((await exchange(again, 'back', 4, 2000)).data).toBe('back');
    again.destroy();
    expect(proxy.accepted).toBeGreaterThanOrEqual(3);
  });
});
