// The connection that carries a share of a fragment to another node of the cluster
// (remote-share-worker.ts and keyed-share-worker.ts on the leader, `openShareLink`;
// remote-share-server.ts on the node running the share): the messages of the workers' protocols
// (executor/stream/parallel/source-protocol.ts, protocol.ts), each in a
// frame of a 4-byte big-endian length and the message serialized as a worker thread's message is
// (node:v8, the structured clone: bigints, ArrayBuffers and plain objects cross as they are).
// Both ends prove they hold the cluster's node-to-node key (etcd-coordinator.ts' peer key) before
// anything else crosses: the client sends a random nonce, the server answers with a nonce of its
// own and an HMAC-SHA256 of the client's under the key, and the client answers with an HMAC of the
// server's. Both ends name their share protocol's version in those first frames (`hello`,
// `challenge`): a peer of another version is refused at once, by both ends, with both versions
// named (a leader does not give shares to a node whose etcd record names another version at all;
// this covers a record that was stale). A frame longer than MAX_FRAME_BYTES, or one that does not deserialize, ends the
// connection; a keyed share's seed, which may be larger, crosses in pieces (`openFrames`).

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { deserialize, serialize } from 'node:v8';
import { SYSTEM_TABLE_ID, TABLE_ID_BYTES, tableLowerBound, tableUpperBound, vnodeRunRanges } from '../../storage/mvcc-key.js';
import { keyedByVnode } from '../stream/parallel/keyed-seed.js';
import type { ManifestPart } from '../../storage/checkpoint/manifest.js';
import type { GainedVnodes } from '../stream/parallel/protocol.js';
import { VNODE_COUNT } from '../stream/parallel/vnode.js';

export type { GainedVnodes };

/** A `stage-checkpoint`'s `gain` or `own`, or a `drop`, as it must be. */
export function isGainedVnodes(value: unknown): value is GainedVnodes {
  if (typeof value !== 'object' || value === null) return false;
  const gain = value as { readonly [key: string]: unknown };
  return (
    gain['vnodes'] instanceof Uint8Array &&
    gain['vnodes'].length === VNODE_COUNT &&
    Array.isArray(gain['tables']) &&
    gain['tables'].every(isTableDeclaration) &&
    new Set(gain['tables'].map((table: { tableId: number }) => table.tableId)).size === gain['tables'].length &&
    gain['stateVnodes'] instanceof Map
  );
}

/**
 * A state table's declaration as a node's reads and drops need it: its id (below the store's
 * records' 0xFFFFFFFF), its column types and key columns, and its vnode columns, if any, key
 * columns every one (storage/state-table.ts `vnodeColumns`), so a malformed one is refused at the
 * frame rather than failing a store's assertion later.
 */
function isTableDeclaration(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const table = value as { readonly tableId?: unknown; readonly columnTypes?: unknown; readonly primaryKey?: unknown; readonly vnodeColumns?: unknown };
  if (!Number.isInteger(table.tableId) || (table.tableId as number) < 0 || (table.tableId as number) >= 0xffffffff) return false;
  if (!Array.isArray(table.columnTypes) || !Array.isArray(table.primaryKey)) return false;
  const width = table.columnTypes.length;
  const key = table.primaryKey as unknown[];
  if (!key.every((column) => Number.isInteger(column) && (column as number) >= 0 && (column as number) < width)) return false;
  if (table.vnodeColumns === undefined) return true;
  return Array.isArray(table.vnodeColumns) && table.vnodeColumns.length > 0 && table.vnodeColumns.every((column) => key.includes(column));
}

/** The largest frame either end accepts (an epoch's batch of one share). */
export const MAX_FRAME_BYTES = 512 * 1024 * 1024;

/** The largest piece of a seed: a `seed` frame's bytes with room for its header under MAX_FRAME_BYTES. */
export const MAX_SEED_CHUNK_BYTES = MAX_FRAME_BYTES - 1024;

/** A seed's pieces when OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES is not set. */
export const DEFAULT_SEED_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * The bound of a seed's pieces OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES gives (tests: a small seed in
 * many frames): unset or empty, DEFAULT_SEED_CHUNK_BYTES; a whole number of bytes from 1 to
 * MAX_SEED_CHUNK_BYTES; anything else an error naming the variable (bin/cli.ts refuses it at start
 * with the same rule).
 */
export function seedChunkBytes(text: string | undefined): number {
  if (text === undefined || text === '') return DEFAULT_SEED_CHUNK_BYTES;
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_SEED_CHUNK_BYTES) {
    throw new Error(`OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: "${text}" is not a whole number of bytes from 1 to ${MAX_SEED_CHUNK_BYTES}`);
  }
  return value;
}

/** This process's bound of a seed's pieces, read once (when a share first opens, not at import). */
let seedChunk: number | undefined;

/**
 * A keyed share's seed crosses in frames of at most this many bytes (`seed` frames before `open`),
 * so a seed of any size fits under MAX_FRAME_BYTES (`seedChunkBytes`).
 */
export function configuredSeedChunkBytes(): number {
  seedChunk ??= seedChunkBytes(process.env['OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES']);
  return seedChunk;
}

/**
 * The version of the share protocol this build speaks: the handshake's and the workers' messages,
 * the frames of a keyed share's seed (`seeding`, `seeded`, `stage`, `stage-checkpoint`, `stage-files`). A node of
 * another version gets no share (its etcd record names its version) and a link that meets one
 * anyway fails at once. Raise it with any change a node of the previous version would not
 * understand. Nodes from before versions were named send none: version 1. Version 3: a Kafka
 * source fragment's batch says how many messages of its offset ranges the node fetched
 * (source-protocol.ts, `fetched`), which a leader of version 3 counts as the source's messages.
 * Version 4: a keyed share a cut keeps may get `add-store` (write the entries of the vnodes it
 * gains that this node read ahead out of a store made from its checkpoint: a `stage-checkpoint`
 * with `gain`, answered `seeding` as the read goes) and `add` frames (their seed, each piece
 * answered `seeding`), then `remap` with `gained` (keyed-share-worker.ts).
 * Version 5: before those, a share that takes back vnodes it held may get `drop` (delete from its
 * store the entries of the vnodes named, the ones it held and does not own; answered `seeding` as
 * it goes), then `remap` with `regained` (its caches emptied); a `stage-checkpoint` for a share
 * names the vnodes it will own (`own`), and the node deletes every other vnode's entries from the
 * store it makes before answering `staged` (`seeding` as it goes).
 * Version 6: a keyed fragment's state tables may carry the vnode in their keys (a view of plan
 * version 11: the declarations' `vnodeColumns`), which a node's stores and reads must follow: a
 * node of version 5 would lay them out under vnode 0.
 * Version 7: a started share's store may come as SST files the leader exported out of its own
 * database at the read's start (`stage-files`, then `file` frames of their bytes; answered by
 * `staged` with that epoch once the node ingested them into a fresh store).
 * Version 8: a leader whose checkpoints name the nodes' parts asks each node on a link of its own
 * for its keyed shares' stores cut at or past its checkpoint's epoch (`checkpoint-stores`, answered
 * `seeding` as the files go up, then `checkpointed` with the parts).
 */
export const SHARE_PROTOCOL_VERSION = 8;

/** The largest version OXBOW_REMOTE_SHARE_PROTOCOL_VERSION takes (an int4 in oxbow_catalog.nodes). */
export const MAX_SHARE_PROTOCOL_VERSION = 2_147_483_647;

/**
 * The version OXBOW_REMOTE_SHARE_PROTOCOL_VERSION makes this node announce and speak (tests: a node
 * of another version in the cluster): unset or empty, SHARE_PROTOCOL_VERSION; a whole number from
 * 1 to MAX_SHARE_PROTOCOL_VERSION; anything else an error naming the variable (bin/cli.ts refuses
 * it at start with the same rule).
 */
export function shareProtocolVersion(text: string | undefined): number {
  if (text === undefined || text === '') return SHARE_PROTOCOL_VERSION;
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_SHARE_PROTOCOL_VERSION) {
    throw new Error(`OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: "${text}" is not a whole number from 1 to ${MAX_SHARE_PROTOCOL_VERSION}`);
  }
  return value;
}

/** This process's share protocol version, read once (the relay threads read it from the same environment). */
let protocolVersion: number | undefined;

export function configuredShareProtocolVersion(): number {
  protocolVersion ??= shareProtocolVersion(process.env['OXBOW_REMOTE_SHARE_PROTOCOL_VERSION']);
  return protocolVersion;
}

/** The version a `hello` or `challenge` names: 1 when it names none (a node from before versions were named). */
export function versionOf(message: unknown): number {
  const version = (message as { version?: unknown }).version;
  return version === undefined ? 1 : typeof version === 'number' ? version : NaN;
}

/** Why a link to a peer of `theirs` is refused by a node of `ours`: both versions named. */
export function versionMismatch(theirs: number, ours: number): string {
  return `it speaks share protocol version ${Number.isNaN(theirs) ? '(unreadable)' : theirs} and this node version ${ours}`;
}

/** The frames of the handshake, before the worker protocol's messages. */
/** A file of a `stage-files`: its column family, its size in bytes (at most MAX_STAGED_FILE_BYTES) and its entries. */
export interface StagedFile {
  readonly family: 'default' | 'records';
  readonly bytes: number;
  readonly entries: number;
}

/** The largest file a `stage-files` names (1 TiB: a bound on what a node writes for one, not a limit any store meets). */
export const MAX_STAGED_FILE_BYTES = 2 ** 40;

/** Whether `value` is a `stage-files` list: one or two files, one per column family at most, each of a known family, a whole positive number of bytes and a whole number of entries. */
export function isStagedFiles(value: unknown): value is readonly StagedFile[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 2) return false;
  const families = new Set<string>();
  for (const file of value as unknown[]) {
    if (typeof file !== 'object' || file === null) return false;
    const { family, bytes, entries } = file as { family?: unknown; bytes?: unknown; entries?: unknown };
    if ((family !== 'default' && family !== 'records') || families.has(family)) return false;
    if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes <= 0 || bytes > MAX_STAGED_FILE_BYTES) return false;
    if (typeof entries !== 'number' || !Number.isSafeInteger(entries) || entries < 0) return false;
    families.add(family);
  }
  return true;
}

/**
 * The key ranges of the vnodes a kept keyed share gains (`gain`, every table keyed by vnode): each
 * state table's runs of them, in table order, as `exportRanges` wants them.
 */
export function gainedRanges(gain: GainedVnodes): { lower: Buffer; upper: Buffer }[] {
  return [...gain.tables].sort((x, y) => x.tableId - y.tableId).flatMap((table) => vnodeRunRanges(table.tableId, gain.vnodes));
}

/**
 * The key ranges of a started keyed share's store made of SST files (a node's out of the checkpoint
 * it follows, or the leader's out of its own database): of each of the fragment's state `tables`
 * (in id order), the runs of the vnodes the share will `own` for a table keyed by vnode (keyed-seed.ts
 * `keyedByVnode`), the whole table for any other; then the store's records (its committed epoch, the
 * tables' windows: every key under table 0xFFFFFFFF, whose next byte is a record's kind, an ASCII
 * letter, below the bound). Sorted, not overlapping, as `exportRanges` wants them.
 */
export function ownStoreRanges(tables: readonly number[], own: GainedVnodes): { lower: Buffer; upper: Buffer }[] {
  const declared = new Map(own.tables.map((table) => [table.tableId, table]));
  const ranges: { lower: Buffer; upper: Buffer }[] = [];
  for (const id of [...new Set(tables)].sort((x, y) => x - y)) {
    const table = declared.get(id);
    if (table === undefined || !keyedByVnode(table, own.stateVnodes)) ranges.push({ lower: tableLowerBound(id), upper: tableUpperBound(id) });
    else ranges.push(...vnodeRunRanges(id, own.vnodes));
  }
  ranges.push({ lower: tableLowerBound(SYSTEM_TABLE_ID), upper: Buffer.alloc(TABLE_ID_BYTES + 8, 0xff) });
  return ranges;
}

export type Handshake =
  /** The client's first frame: its nonce and its share protocol version. */
  | { readonly t: 'hello'; readonly nonce: Uint8Array; readonly version: number }
  /** The server's answer to a `hello` of its own version; to another version it answers `refused` (with its version) and ends the connection. */
  | { readonly t: 'challenge'; readonly nonce: Uint8Array; readonly proof: Uint8Array; readonly version: number }
  | { readonly t: 'proof'; readonly proof: Uint8Array }
  /** A piece of a keyed share's seed, in order, before its `open` (whose seed, if any, comes last). */
  | { readonly t: 'seed'; readonly bytes: Uint8Array }
  /** The share's worker data (source-protocol.ts' SourceWorkerData without the database and the signal); a keyed share's `staged` names a seed sent ahead. */
  | { readonly t: 'open'; readonly data: unknown }
  /** A keyed share's seed sent ahead of its cut (keyed-share-stage.ts): a piece of whole entries, written as it comes; then `stage-end`, answered by `staged`. */
  | { readonly t: 'stage'; readonly bytes: Uint8Array }
  | { readonly t: 'stage-end' }
  /**
   * A keyed share's store made on the node from the checkpoint it follows, ahead of its cut
   * (keyed-share-stage.ts): one at or past `epoch`, followed within `withinMs`; answered by `staged`
   * with the epoch of the checkpoint the store holds, or by `refused` (the leader then sends the seed).
   * `tables`: the fragment's state tables, the only ones the store keeps (the others' rows dropped).
   * `gain`: for a share a cut keeps, the vnodes it gains: the node reads their entries out of the
   * store (answering `seeding` as it goes), keeps them for the share's `add-store` and removes the store.
   */
  | { readonly t: 'stage-checkpoint'; readonly epoch: string; readonly withinMs: number; readonly tables?: readonly number[]; readonly gain?: GainedVnodes; readonly own?: GainedVnodes }
  /**
   * A started keyed share's store as SST files the leader copied out of its database as of `epoch`
   * (keyed-share-stage.ts, `ownStoreRanges`: the vnodes the share will `own` of the fragment's state
   * `tables`, the others whole, the store's records): each file's column family, size and entries,
   * its bytes following in `file` frames, in order. The node ingests them into a fresh store and
   * answers `staged` with `epoch` (`seeding` as the bytes come), or `refused`. With `gain` instead
   * of `own` (a kept share's gained vnodes, `gainedRanges`), the node keeps the files by the name it
   * answers for the share's `add-store` at the cut, as it keeps those it copies out of a checkpoint.
   */
  | { readonly t: 'stage-files'; readonly epoch: string; readonly tables: readonly number[]; readonly own?: GainedVnodes; readonly gain?: GainedVnodes; readonly files: readonly StagedFile[] }
  | { readonly t: 'file'; readonly bytes: Uint8Array }
  | { readonly t: 'refused'; readonly reason: string; readonly version?: number }
  | { readonly t: 'staged'; readonly id: string; readonly epoch?: string }
  /** A keyed share's node, after its `open`: a piece of the seed received or written (each restarts the leader's deadline), then `seeded` once the seed is in its store and the worker started. */
  | { readonly t: 'seeding' }
  | { readonly t: 'seeded' }
  /**
   * The leader's checkpoint at `epoch` (share-store-checkpoint.ts): the node cuts every running
   * keyed share's store and uploads its files under `nodes/<node>/`, answering `seeding` after each
   * file sent and `checkpointed` with one part per store (storage/checkpoint/manifest.ts'
   * `ManifestPart`), or `refused` (no object store on this node, an upload that failed).
   */
  | { readonly t: 'checkpoint-stores'; readonly epoch: string }
  | { readonly t: 'checkpointed'; readonly parts: readonly ManifestPart[] };

/**
 * The frames that open a share: a keyed share's seed (packed entries, storage/write-batch.ts) in
 * pieces of whole entries of `chunkBytes` at most (an entry longer than that alone), then `open`
 * with the last piece, so the node writes each piece as it comes.
 */
export function openFrames(share: object, chunkBytes = configuredSeedChunkBytes()): Buffer[] {
  const seed = (share as { seed?: unknown }).seed;
  if (!(seed instanceof Uint8Array) || seed.length <= chunkBytes) return [frame({ t: 'open', data: share } satisfies Handshake)];
  const pieces = wholeEntryPieces(seed, chunkBytes);
  const frames = pieces.slice(0, -1).map((bytes) => frame({ t: 'seed', bytes } satisfies Handshake));
  frames.push(frame({ t: 'open', data: { ...share, seed: pieces[pieces.length - 1]! } } satisfies Handshake));
  return frames;
}

/**
 * Packed entries ([u8 op][u32le key length][key][u32le value length][value]) cut into pieces of
 * whole entries of about `bound` bytes at most (an entry longer than that alone); at least one
 * piece. A truncated last entry is an error: a seed is whole entries.
 */
export function wholeEntryPieces(bytes: Uint8Array, bound: number): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  let start = 0;
  do {
    const end = pieceEnd(bytes, start, bound);
    pieces.push(bytes.subarray(start, end));
    start = end;
  } while (start < bytes.length);
  return pieces;
}

/**
 * Where the piece of whole entries of `bytes` that starts at `start` ends: about `bound` bytes at
 * most (an entry longer than that alone). A truncated entry is an error.
 */
export function pieceEnd(bytes: Uint8Array, start: number, bound: number): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  let offset = start;
  while (offset < bytes.length) {
    if (offset + 5 > bytes.length) throw new Error(`a seed's entry at byte ${offset} is cut short`);
    const valueAt = offset + 5 + view.getUint32(offset + 1, true);
    if (valueAt + 4 > bytes.length) throw new Error(`a seed's entry at byte ${offset} is cut short`);
    const end = valueAt + 4 + view.getUint32(valueAt, true);
    if (end > bytes.length) throw new Error(`a seed's entry at byte ${offset} is cut short`);
    if (end - start > bound && offset > start) return offset;
    offset = end;
  }
  return offset;
}

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

/** A client's first frame: `nonce` and this node's share protocol version. */
export function helloFrame(nonce: Uint8Array, version = configuredShareProtocolVersion()): Buffer {
  return frame({ t: 'hello', nonce, version } satisfies Handshake);
}

/**
 * A client's answer to the server's first frame after its `hello` with `nonce`: the `proof` frame
 * to send when that frame is a challenge of this node's `version` proving the server holds
 * `keyHex`, else why the link fails (a server of another version, which refused the `hello` or
 * answered with another version; or one that is not the cluster's): the caller fails it at once.
 */
export function answerChallenge(keyHex: string, nonce: Uint8Array, message: unknown, version = configuredShareProtocolVersion()): Buffer | string {
  const challenge = message as Handshake;
  if (challenge.t === 'refused' && challenge.version !== undefined && challenge.version !== version) return versionMismatch(versionOf(challenge), version);
  if (challenge.t === 'refused') return `it refused the link: ${String(challenge.reason)}`;
  if (challenge.t === 'challenge' && versionOf(challenge) !== version) return versionMismatch(versionOf(challenge), version);
  if (challenge.t !== 'challenge' || !proofMatches(keyHex, 'server', nonce, challenge.proof) || !(challenge.nonce instanceof Uint8Array)) return 'it did not prove it holds the cluster key';
  return frame({ t: 'proof', proof: proofOf(keyHex, 'client', challenge.nonce) } satisfies Handshake);
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

/** The leader's end of one share's link (`openShareLink`). */
export interface ShareLink {
  /** Sends a message of the worker protocol; sent before the share is open, it waits its turn. */
  send(message: unknown): void;
  /** Ends the link after what was sent: the node ends its side once it answered, one that does not is cut off 1 s later. Answers still come; failures are still reported. */
  end(): void;
  /** Cuts the link at once; nothing is reported after. */
  destroy(): void;
}

export interface ShareLinkEvents {
  /** The handshake's deadline, the seed's from each of its pieces, and, while the share runs, how often `overdue` is asked. */
  readonly timeoutMs: number;
  /** Each message the node sends once the share is open, in order. */
  readonly onMessage: (message: unknown) => void;
  /** The link failed (no connection, closed, a frame unreadable, no proof of the key, no handshake in time, `overdue`): reported once. */
  readonly onFail: (reason: string) => void;
  /** While the share runs: why the node is late (an answer past its deadline), or undefined. */
  readonly overdue?: (now: number) => string | undefined;
  /**
   * A keyed share: its node answers the `open` with `seeding` frames while it receives and writes
   * the seed (each gives the deadline again) and `seeded` when its worker started, which this gets
   * (the relay restarts its answers' deadlines from then: the seed's time is not theirs).
   */
  readonly seeded?: (now: number) => void;
  /** The share protocol version this end speaks (tests); this process's by default. */
  readonly version?: number;
}

/** Requests sent while the node wrote its seed (`seeded` at `now`): each answer is due `timeoutMs` after `now` at the earliest. */
export function restartDeadlines(entries: readonly { deadline: number }[], now: number, timeoutMs: number): void {
  for (const entry of entries) entry.deadline = Math.max(entry.deadline, now + timeoutMs);
}

/** Where a link is: the handshake, the node writing its seed (a keyed share), the share running. */
export type LinkPhase = 'handshake' | 'seeding' | 'running';

/**
 * Why the link is late at `now`, or undefined: the handshake within `timeoutMs` of the link's
 * start, the seed within `timeoutMs` of its last progress (`since`: the `open` sent or the last
 * `seeding` frame), and then whatever `overdue` says of the share's answers.
 */
export function linkLate(phase: LinkPhase, now: number, since: number, timeoutMs: number, overdue?: (now: number) => string | undefined): string | undefined {
  if (phase === 'handshake') return now > since + timeoutMs ? `no handshake within ${timeoutMs} ms` : undefined;
  if (phase === 'seeding') return now > since + timeoutMs ? `no progress of its seed within ${timeoutMs} ms` : undefined;
  return overdue?.(now);
}

/**
 * Connects to the node at `address`, proves the cluster key `key` (hex) and checks the node's
 * proof, then opens the share with `share` (the worker data the node starts the worker with)
 * and sends what waited; a fragment's relay thread's end of the link.
 */
export function openShareLink(address: string, key: string, share: object, events: ShareLinkEvents): ShareLink {
  let done = false;
  let ended = false;
  /** The `open` was sent: what the relay sends goes straight to the socket. */
  let opened = false;
  let phase: LinkPhase = 'handshake';
  /** The start of the phase's deadline: the link's start, then the seed's last progress. */
  let since = Date.now();
  let socket: Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Frames waiting for the share to open. */
  const outbox: Buffer[] = [];
  const stop = (): void => {
    done = true;
    if (timer !== undefined) clearInterval(timer);
    socket?.destroy();
  };
  const fail = (reason: string): void => {
    if (done) return;
    stop();
    events.onFail(reason);
  };
  const link: ShareLink = {
    send(message) {
      if (done) return;
      const bytes = frame(message);
      if (opened) socket!.write(bytes);
      else outbox.push(bytes);
    },
    end() {
      if (done || ended) return;
      ended = true;
      if (timer !== undefined) clearInterval(timer);
      socket?.end();
      setTimeout(() => socket?.destroy(), 1000).unref();
    },
    destroy() {
      if (!done) stop();
    },
  };
  let target: { host: string; port: number };
  try {
    target = parseAddress(address);
  } catch (error) {
    fail((error as Error).message);
    return link;
  }
  const nonce = newNonce();
  const connection = connect(target);
  socket = connection;
  connection.setNoDelay(true);
  connection.on('error', (error) => fail(error.message));
  connection.on('close', () => fail('the connection closed'));
  connection.on('connect', () => connection.write(helloFrame(nonce, events.version)));
  readFrames(
    connection,
    (message) => {
      if (done) return;
      if (phase === 'running') return events.onMessage(message);
      if (phase === 'seeding') {
        const kind = (message as { t?: unknown }).t;
        since = Date.now();
        if (kind === 'seeding') return;
        if (kind !== 'seeded') return fail(`it sent "${String(kind)}" before its seed was written`);
        phase = 'running';
        events.seeded?.(since);
        return;
      }
      const proof = answerChallenge(key, nonce, message, events.version);
      if (typeof proof === 'string') return fail(proof);
      connection.write(proof);
      for (const bytes of openFrames(share)) connection.write(bytes);
      for (const bytes of outbox.splice(0)) connection.write(bytes);
      opened = true;
      // A keyed share's node writes its seed first: its deadline runs from each piece.
      phase = events.seeded === undefined ? 'running' : 'seeding';
      since = Date.now();
    },
    (error) => fail(error.message),
  );
  timer = setInterval(() => {
    const late = linkLate(phase, Date.now(), since, events.timeoutMs, events.overdue);
    if (late !== undefined) fail(late);
  }, Math.max(10, Math.min(100, events.timeoutMs / 4)));
  return link;
}

/** A relay thread's own fields of its worker data (remote-shares.ts), the thread's port and signal. */
const RELAY_FIELDS: ReadonlySet<string> = new Set(['address', 'node', 'key', 'stats', 'fallbackScript', 'timeoutMs', 'startedAt', 'port', 'signal']);
/** What only the node's worker needs: a keyed share's seed, the seed it sent ahead and its kind. */
const NODE_FIELDS: ReadonlySet<string> = new Set(['kind', 'seed', 'staged']);
/** What only a worker on the leader needs: the leader's database. */
const LEADER_FIELDS: ReadonlySet<string> = new Set(['token', 'path']);

function without(data: object, ...sets: ReadonlySet<string>[]): object {
  return Object.fromEntries(Object.entries(data).filter(([name]) => !sets.some((set) => set.has(name))));
}

/**
 * A relay thread's worker data split in two: `share`, what the node gets at the handshake (no
 * database token or path, nothing of the relay's), and `local`, the worker data of the worker the
 * relay starts on the leader when the node fails.
 */
export function shareData(data: object): { share: object; local: object } {
  return { share: without(data, RELAY_FIELDS, LEADER_FIELDS), local: without(data, RELAY_FIELDS, NODE_FIELDS) };
}
