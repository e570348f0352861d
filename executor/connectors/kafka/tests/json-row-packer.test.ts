// The JSON fast path (json-row-packer.ts, through batch-packer.ts) against the general path
// (MessageDecoder, then storage's row codec, as packChanges packs): for a corpus of messages,
// hand-written and generated (valid ones, escaped strings, unicode, numbers at the edges of every
// type, missing, extra and duplicate fields, nulls, invalid JSON, wrong types, oversized, byte
// mutations of valid messages), both give the same packed bytes, the same kinds and the same
// rejected messages (offset, error, payload). The oracle is the general path; each corpus also
// asserts how many messages the fast path took, so a fast path that declines everything fails.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../../../sql/catalog.js';
import { type } from '../../../../sql/types.js';
import { ByteWriter } from '../../../../storage/byte-writer.js';
import { MessageDecoder, type DecodedChanges } from '../../message-decoder.js';
import { sourceLayout } from '../../source-layout.js';
import type { RawMessageBatch } from '../../source.js';
import { BatchPacker } from '../batch-packer.js';
import { packChanges, unpackRows } from '../decoded-batch.js';
import { isWellFormedUtf8, timestampMicros } from '../json-row-packer.js';
import { kafkaRowId } from '../kafka-replay.js';
import { column, CORPUS_MAX_BYTES, EVERY_TYPE_COLUMNS, INCLUDE_COLUMNS, INVALID_OR_REJECTED, jsonSource, TIMESTAMPS, utf8Messages, VALID_EVERY_TYPE } from './json-corpus.js';

const MAX_BYTES = CORPUS_MAX_BYTES;
const relation = jsonSource;

const EVERY_TYPE = relation(EVERY_TYPE_COLUMNS, { include: [...INCLUDE_COLUMNS] });

/** Nexmark's bid, as bench/kafka.ts declares it. */
const BID = relation([
  column('auction', type('int8')),
  column('bidder', type('int8')),
  column('price', type('int8')),
  column('channel', type('varchar')),
  column('url', type('varchar')),
  column('date_time', type('timestamp')),
  column('extra', type('varchar')),
]);

/** Names every JavaScript object has. */
const INHERITED_NAMES = relation([column('constructor', type('text')), column('__proto__', type('int4')), column('toString', type('text'))]);

/** An upserting table (a key column is required). */
const UPSERT = relation([column('id', type('int8'), false), column('name', type('text'))], { kind: 'table', primaryKey: [0], format: 'upsert' });

interface Outcome {
  readonly bytes: number[];
  readonly kinds: number[];
  readonly rejects: string[];
}

function batchOf(values: (Buffer | string | null)[], keys?: (Buffer | string | null)[], partition = 3): RawMessageBatch {
  const toBuffer = (value: Buffer | string | null): Buffer | null => (value === null ? null : typeof value === 'string' ? Buffer.from(value, 'utf8') : value);
  return {
    partition,
    offsets: values.map((_, i) => BigInt(4_000_000_000 + i)),
    timestamps: values.map((_, i) => 1_764_000_000_000 + i * 7),
    keys: values.map((_, i) => toBuffer(keys?.[i] ?? null)),
    values: values.map(toBuffer),
    highWatermark: BigInt(4_000_000_000 + values.length),
  };
}

function rowIds(def: RelationDef): (partition: number, offset: bigint) => bigint {
  return def === BID ? kafkaRowId : () => 0n;
}

/** The general path: MessageDecoder over the whole batch, then every row packed with the row codec. */
function general(def: RelationDef, batch: RawMessageBatch): Outcome {
  const decoder = new MessageDecoder(sourceLayout(def), MAX_BYTES, rowIds(def));
  const out: DecodedChanges = { rows: [], kinds: [] };
  const rejects: string[] = [];
  decoder.decode(batch, out, (partition, offset, error, payload) => rejects.push(`${partition}/${offset}: ${error} [${payload?.toString('hex') ?? 'null'}]`));
  const packed = packChanges(out.rows, out.kinds, new ByteWriter(16));
  return { bytes: [...packed.rows], kinds: [...packed.kinds], rejects };
}

/** The worker's path: BatchPacker with the fast path. */
function fast(def: RelationDef, batch: RawMessageBatch): Outcome & { readonly packedFast: number } {
  const layout = sourceLayout(def);
  const packer = new BatchPacker(layout, new MessageDecoder(layout, MAX_BYTES, rowIds(def)), MAX_BYTES, rowIds(def));
  expect(packer.fast).toBeDefined();
  const rejects: string[] = [];
  const packed = packer.pack(batch, 0, (partition, offset, error, payload) => rejects.push(`${partition}/${offset}: ${error} [${payload?.toString('hex') ?? 'null'}]`));
  expect(packed.count).toBe(packed.kinds.length);
  return { bytes: [...packed.rows], kinds: [...packed.kinds], rejects, packedFast: packer.fast!.packed };
}

/** Both paths agree on `values`; returns how many messages the fast path packed itself. */
function agree(def: RelationDef, values: (Buffer | string | null)[], keys?: (Buffer | string | null)[], partition?: number): number {
  const batch = batchOf(values, keys, partition);
  const expected = general(def, batch);
  const actual = fast(def, batch);
  if (actual.bytes.length !== expected.bytes.length || actual.bytes.some((byte, i) => byte !== expected.bytes[i])) {
    // Name the first message whose row differs (row by row, both unpacked).
    const toRows = (outcome: Outcome): unknown[] => unpackRows({ count: outcome.kinds.length, rows: Uint8Array.from(outcome.bytes), kinds: Int8Array.from(outcome.kinds) });
    expect(toRows(actual)).toEqual(toRows(expected));
  }
  expect(actual.bytes).toEqual(expected.bytes);
  expect(actual.kinds).toEqual(expected.kinds);
  expect(actual.rejects).toEqual(expected.rejects);
  return actual.packedFast;
}

describe('the JSON fast path equals the general path', () => {
  it('on hand-written valid messages of every type, taking most of them itself', () => {
    const fastCount = agree(
      EVERY_TYPE,
      VALID_EVERY_TYPE,
      VALID_EVERY_TYPE.map((_, i) => (i % 3 === 0 ? null : i % 3 === 1 ? 'key' : Buffer.from([0, 255, 128]))),
    );
    // Every message above is valid and its fields convert: the fast path packs each.
    expect(fastCount).toBe(VALID_EVERY_TYPE.length - 1); // all but '{}' (req is missing: rejected)
  });

  it('on invalid JSON, wrong types, missing, null and duplicate fields, escaped keys, oversized messages (errors included)', () => {
    const fastCount = agree(EVERY_TYPE, INVALID_OR_REJECTED);
    expect(fastCount).toBe(0);
  });

  it('on timestamps and timestamptz of every shape, with and without zones, in range and out', () => {
    const messages = [...TIMESTAMPS.map((text) => JSON.stringify({ req: 1, ts: text })), ...TIMESTAMPS.map((text) => JSON.stringify({ req: 1, tz: text }))];
    const fastCount = agree(EVERY_TYPE, messages);
    // Most timestamp shapes (and timestamptz with a zone) are read from the bytes.
    expect(fastCount).toBeGreaterThan(TIMESTAMPS.length);
  });

  it('on messages without a value, and UPSERT tombstones and upserts', () => {
    agree(EVERY_TYPE, [null, '{"req":1}', null]);
    const fastCount = agree(UPSERT, ['{"id":1,"name":"a"}', null, '{"name":"no id"}', null, '{"id":"2","name":"b"}'], ['1', '1', null, '{"id":7}', '2']);
    expect(fastCount).toBe(2);
  });

  it('on invalid and valid UTF-8 in declared and undeclared strings', () => {
    const messages = utf8Messages();
    const fastCount = agree(EVERY_TYPE, messages);
    expect(fastCount).toBeGreaterThan(0);
  });

  it('for columns named like inherited object properties (missing is NULL, present is the own field)', () => {
    const decoder = new MessageDecoder(sourceLayout(INHERITED_NAMES), MAX_BYTES, () => 0n);
    const out: DecodedChanges = { rows: [], kinds: [] };
    decoder.decode(batchOf(['{}', '{"__proto__":5,"toString":"s"}']), out, (_p, offset, error) => expect.unreachable(`${offset}: ${error}`));
    expect(out.rows).toEqual([
      [null, null, null, 0n],
      [null, 5, 's', 0n],
    ]);
    const fastCount = agree(INHERITED_NAMES, ['{}', '{"constructor":"c"}', '{"__proto__":5,"toString":"s"}', '{"__proto__":null}', '{"hasOwnProperty":1}']);
    expect(fastCount).toBe(5);
  });

  it('on Nexmark bids (all taken by the fast path) with row ids from partition and offset', () => {
    const bids = Array.from(
      { length: 50 },
      (_, i) =>
        `{"auction":${1000 + i},"bidder":${2001 + i * 7},"price":${i * 31337},"channel":"channel-${i % 4}","url":"https://www.nexmark.com/item.htm?query=${i}","date_time":"2015-07-15 00:00:0${i % 10}.${String(i).padStart(3, '0')}","extra":"${'x'.repeat(i)}"}`,
    );
    expect(agree(BID, bids)).toBe(bids.length);
    // A partition beyond what a row id can hold: kafkaRowId throws, both paths reject every message.
    expect(agree(BID, bids.slice(0, 3), undefined, 70_000)).toBe(0);
  });

  it('on generated messages: random values for declared fields, field order, whitespace, extra fields', () => {
    const declared = EVERY_TYPE.columns.filter((c) => !c.hidden && !c.name.startsWith('_')).map((c) => c.name);
    const scalar = fc.oneof(
      fc.integer(),
      fc.integer({ min: -40000, max: 40000 }),
      fc.maxSafeInteger(),
      fc.bigInt({ min: -(1n << 64n), max: 1n << 64n }).map((value) => ({ raw: value.toString() })),
      fc.double(),
      fc.constantFrom('-0', '0.0', '1e2', '1E-2', '5.000', '123456789012345678', '0.1', '-1.5e300').map((raw) => ({ raw })),
      fc.boolean(),
      fc.constant(null),
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.string({ maxLength: 20 }),
      fc.date({ min: new Date('0100-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((date) => date.toISOString().replace('T', ' ').replace('Z', '')),
      fc.constantFrom('2026-11-30 07:36:32', '2024-02-29T00:00:00.5', '2026-11-30T07:36:32Z', '2024-02-29 00:00:00.25+05:30', '1999-12-31 23:59:59-0800', '{1,2}', '1 day', '\\x00', 'true', 'NaN', 'Infinity'),
      fc.jsonValue({ maxDepth: 2 }),
    );
    const whitespace = fc.constantFrom('', ' ', '\n', '\t ', '\r\n');
    const message = fc
      .tuple(
        fc.uniqueArray(fc.constantFrom(...declared, 'extra1', 'extra2', 'nested'), { maxLength: declared.length + 3 }),
        fc.array(scalar, { minLength: declared.length + 3, maxLength: declared.length + 3 }),
        fc.array(whitespace, { minLength: 4, maxLength: 4 }),
        fc.boolean(),
      )
      .map(([names, values, [w0, w1, w2, w3], withReq]) => {
        const fields = names.map((name, i) => {
          const value = values[i];
          const text = value !== null && typeof value === 'object' && 'raw' in (value as object) ? (value as { raw: string }).raw : JSON.stringify(value);
          return `${w1}${JSON.stringify(name)}${w2}:${w3}${text}`;
        });
        if (withReq && !names.includes('req')) fields.push('"req":1');
        return `${w0}{${fields.join(',')}}${w0}`;
      });
    let taken = 0;
    let total = 0;
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 20 }), (messages) => {
        taken += agree(EVERY_TYPE, messages);
        total += messages.length;
      }),
      { numRuns: 150, seed: 7 },
    );
    expect(taken).toBeGreaterThan(total / 20);
  });

  it('on byte mutations of valid messages (flip, cut, insert)', () => {
    const bases = [...VALID_EVERY_TYPE, '{"auction":1,"bidder":2,"price":3,"channel":"c","url":"u","date_time":"2015-07-15 00:00:00.001","extra":""}'];
    const mutated = fc.tuple(fc.constantFrom(...bases), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert', 'delete')).map(([base, at, byte, how]) => {
      const bytes = Buffer.from(base, 'utf8');
      const index = bytes.length === 0 ? 0 : at % bytes.length;
      if (how === 'flip') bytes[index] = byte;
      if (how === 'cut') return bytes.subarray(0, index);
      if (how === 'insert') return Buffer.concat([bytes.subarray(0, index), Buffer.from([byte]), bytes.subarray(index)]);
      if (how === 'delete') return Buffer.concat([bytes.subarray(0, index), bytes.subarray(index + 1)]);
      return bytes;
    });
    let taken = 0;
    fc.assert(
      fc.property(fc.array(mutated, { minLength: 1, maxLength: 30 }), (messages) => {
        taken += agree(EVERY_TYPE, messages) + agree(BID, messages);
      }),
      { numRuns: 200, seed: 11 },
    );
    expect(taken).toBeGreaterThan(0);
  });
});

describe('the fast path over many messages', () => {
  it('still tells read fields from missing ones after 2^31 messages (the int32 message number starts over)', () => {
    const layout = sourceLayout(EVERY_TYPE);
    const packer = new BatchPacker(layout, new MessageDecoder(layout, MAX_BYTES, () => 0n), MAX_BYTES, () => 0n);
    packer.fast!.generation = 0x7fffffff - 2;
    const messages = Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? `{"req":${i},"t":"row ${i}"}` : `{"req":${i}}`));
    const batch = batchOf(messages);
    const packed = packer.pack(batch, 0, (_p, offset, error) => expect.unreachable(`${offset}: ${error}`));
    expect(packer.fast!.packed).toBe(messages.length);
    expect([...packed.rows]).toEqual(general(EVERY_TYPE, batch).bytes);
  });
});

describe('the fast path helpers', () => {
  it('isWellFormedUtf8 agrees with a decode/encode round trip', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), (bytes) => {
        const buffer = Buffer.from(bytes);
        const roundTrip = Buffer.from(buffer.toString('utf8'), 'utf8');
        expect(isWellFormedUtf8(buffer, 0, buffer.length)).toBe(roundTrip.equals(buffer));
      }),
      { numRuns: 3000, seed: 3 },
    );
  });

  it('timestampMicros equals the microseconds JavaScript Date gives for the same instant', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }), (date) => {
        const text = date.toISOString().slice(0, 23).replace('T', ' ');
        expect(timestampMicros(Buffer.from(text), 0, text.length)).toBe(date.getTime() * 1000);
      }),
      { numRuns: 500, seed: 5 },
    );
  });

  it('timestampMicros with a zone equals Date.parse of the same ISO text (timestamptz), and ignores it for timestamp', () => {
    const zone = fc.oneof(
      fc.constant('Z'),
      fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 14 }), fc.constantFrom(0, 30, 45)).map(([sign, h, m]) => `${sign}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`),
    );
    fc.assert(
      fc.property(fc.date({ min: new Date('1000-01-01T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }), zone, (date, suffix) => {
        const local = date.toISOString().slice(0, 23);
        const text = local + suffix;
        const bytes = Buffer.from(text);
        expect(timestampMicros(bytes, 0, bytes.length, true)).toBe(Date.parse(text) * 1000);
        expect(timestampMicros(bytes, 0, bytes.length, false)).toBe(Date.parse(`${local}Z`) * 1000);
        expect(timestampMicros(bytes, 0, bytes.length - suffix.length, true)).toBeNaN();
      }),
      { numRuns: 500, seed: 9 },
    );
  });
});
