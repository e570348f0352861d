// The connection that carries a source fragment's share to another node of the cluster
// (remote-share-worker.ts on the leader, remote-share-server.ts on the node running the share): the
// messages of the source workers' protocol (executor/stream/parallel/source-protocol.ts), each in a
// frame of a 4-byte big-endian length and the message serialized as a worker thread's message is
// (node:v8, the structured clone: bigints, ArrayBuffers and plain objects cross as they are).
// Both ends prove they hold the cluster's node-to-node key (etcd-coordinator.ts' peer key) before
// anything else crosses: the client sends a random nonce, the server answers with a nonce of its
// own and an HMAC-SHA256 of the client's under the key, and the client answers with an HMAC of the
// server's. A frame longer than MAX_FRAME_BYTES, or one that does not deserialize, ends the
// connection.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import { deserialize, serialize } from 'node:v8';

/** The largest frame either end accepts (an epoch's batch of one share). */
export const MAX_FRAME_BYTES = 512 * 1024 * 1024;

/** The frames of the handshake, before the worker protocol's messages. */
export type Handshake =
  | { readonly t: 'hello'; readonly nonce: Uint8Array }
  | { readonly t: 'challenge'; readonly nonce: Uint8Array; readonly proof: Uint8Array }
  | { readonly t: 'proof'; readonly proof: Uint8Array }
  /** The share's worker data (source-protocol.ts' SourceWorkerData without the database and the signal). */
  | { readonly t: 'open'; readonly data: unknown };

/** HMAC-SHA256 of `nonce` under the hex key, for the side named by `role`. */
export function proofOf(keyHex: string, role: 'server' | 'client', nonce: Uint8Array): Uint8Array {
  return createHmac('sha256', Buffer.from(keyHex, 'hex') as unknown as Uint8Array)
    .update(`oxbow remote share ${role}\0`)
    .update(nonce)
    .digest() as unknown as Uint8Array;
}

export function proofMatches(keyHex: string, role: 'server' | 'client', nonce: Uint8Array, proof: unknown): boolean {
  if (!(proof instanceof Uint8Array) || proof.length !== 32) return false;
  return timingSafeEqual(proofOf(keyHex, role, nonce), proof);
}

export function newNonce(): Uint8Array {
  return randomBytes(32) as unknown as Uint8Array;
}

/** One message as a frame. */
export function frame(message: unknown): Buffer {
  const body = serialize(message);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head as unknown as Uint8Array, body as unknown as Uint8Array]);
}

/**
 * Reads frames from a socket and hands each message to `onMessage`, in order; `onError` gets a
 * frame too long or unreadable (the caller ends the connection).
 */
export function readFrames(socket: Socket, onMessage: (message: unknown) => void, onError: (error: Error) => void): void {
  let chunks: Buffer[] = [];
  let buffered = 0;
  let failed = false;
  socket.on('data', (chunk: Buffer) => {
    if (failed) return;
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= 4) {
      // The chunks are joined only once a whole frame is there (a large batch comes in many).
      if (chunks[0]!.length < 4) chunks = [Buffer.concat(chunks as unknown as Uint8Array[])];
      const length = chunks[0]!.readUInt32BE(0);
      if (length > MAX_FRAME_BYTES) {
        failed = true;
        onError(new Error(`a frame of ${length} bytes is over the ${MAX_FRAME_BYTES}-byte bound`));
        return;
      }
      if (buffered < 4 + length) return;
      const joined = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks as unknown as Uint8Array[]);
      let message: unknown;
      try {
        message = deserialize(joined.subarray(4, 4 + length) as unknown as Uint8Array);
      } catch (error) {
        failed = true;
        onError(new Error(`a frame that does not deserialize: ${error instanceof Error ? error.message : String(error)}`));
        return;
      }
      const rest = joined.subarray(4 + length);
      chunks = rest.length === 0 ? [] : [rest];
      buffered = rest.length;
      onMessage(message);
      if (failed || socket.destroyed) return;
    }
  });
}

/** `host:port` or `[v6]:port` to its parts. */
export function parseAddress(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]*)\]?:(\d+)$/.exec(address);
  if (match === null) throw new Error(`"${address}" is not HOST:PORT`);
  return { host: match[1]!, port: Number(match[2]) };
}

export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
