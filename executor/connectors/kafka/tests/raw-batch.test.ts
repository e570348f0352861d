// raw-batch.ts: a partition's messages through the transferable form and back, null keys and
// values, empty ones, and a batch taken from a later message on; the copy is independent.
import { describe, expect, it } from 'vitest';
import type { RawMessageBatch } from '../../source.js';
import { copyRaw, packRaw, rawBuffers, unpackRaw } from '../raw-batch.js';

function batchOf(count: number): RawMessageBatch {
  const offsets: bigint[] = [];
  const timestamps: number[] = [];
  const keys: (Buffer | null)[] = [];
  const values: (Buffer | null)[] = [];
  for (let i = 0; i < count; i++) {
    offsets.push(1_000_000_000_000n + BigInt(i));
    timestamps.push(1_700_000_000_000 + i * 7);
    keys.push(i % 3 === 0 ? null : Buffer.from(`key-${i}`));
    values.push(i % 5 === 0 ? null : i % 5 === 1 ? Buffer.alloc(0) : Buffer.from(JSON.stringify({ id: i, text: 'é'.repeat(i % 4) })));
  }
  return { partition: 3, offsets, timestamps, keys, values, highWatermark: 99n };
}

function plain(batch: RawMessageBatch): unknown {
  return { ...batch, keys: batch.keys.map((key) => key?.toString('hex') ?? null), values: batch.values.map((value) => value?.toString('hex') ?? null) };
}

describe('raw partition batches', () => {
  it('round-trip every message from a given one on', () => {
    const batch = batchOf(23);
    for (const from of [0, 1, 10, 23]) {
      const raw = packRaw(batch, from);
      const back = unpackRaw(3, raw, 99n);
      const expected: RawMessageBatch = { partition: 3, offsets: batch.offsets.slice(from), timestamps: batch.timestamps.slice(from), keys: batch.keys.slice(from), values: batch.values.slice(from), highWatermark: 99n };
      expect(plain(back)).toEqual(plain(expected));
      expect(rawBuffers(raw)).toHaveLength(5);
    }
  });

  it('copies into buffers of their own', () => {
    const raw = packRaw(batchOf(8), 0);
    const copy = copyRaw(raw);
    raw.bytes.fill(0);
    raw.offsets.fill(0n);
    expect(plain(unpackRaw(3, copy, 99n))).toEqual(plain({ ...batchOf(8) }));
  });
});
