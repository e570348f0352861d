// lookupWithin: a lookup that never answers fails at the deadline with ETIMEOUT naming the host;
// a real one (localhost, through net.connect to a loopback server) passes through; an answer
// after the deadline is ignored.

import { createServer, connect, type LookupFunction } from 'node:net';
import { describe, expect, it } from 'vitest';
import { kafkaSocketFactory, lookupWithin } from '../dns-lookup.js';

describe('lookupWithin', () => {
  it('fails a lookup that never answers at the deadline', async () => {
    const hung: LookupFunction = () => undefined;
    const started = Date.now();
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookupWithin(200, hung)('db.example', {}, (failure) => resolve(failure)));
    expect(error?.code).toBe('ETIMEOUT');
    expect(error?.message).toBe('DNS lookup of db.example: no answer within 200 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('ignores an answer that comes after the deadline', async () => {
    const late: LookupFunction = (_host, _options, callback) => void setTimeout(() => callback(null, '127.0.0.1', 4), 150);
    const calls: unknown[] = [];
    lookupWithin(50, late)('late.example', {}, (error, address) => calls.push(error?.code ?? address));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(calls).toEqual(['ETIMEOUT']);
  });

  it('connects through a real lookup of localhost', async () => {
    const server = createServer((socket) => socket.end('hi'));
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      const text = await new Promise<string>((resolve, reject) => {
        const socket = connect({ host: 'localhost', port, family: 4, lookup: lookupWithin(5000) });
        let data = '';
        socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(text).toBe('hi');
    } finally {
      server.close();
    }
  });
});

describe('kafkaSocketFactory', () => {
  it('connects in plaintext when kafkajs passes ssl = null', async () => {
    const server = createServer((socket) => socket.end('plain'));
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      const text = await new Promise<string>((resolve, reject) => {
        let data = '';
        const socket = kafkaSocketFactory(2000)({ host: 'localhost', port, ssl: null, onConnect: () => undefined });
        socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(text).toBe('plain');
    } finally {
      server.close();
    }
  });
});
