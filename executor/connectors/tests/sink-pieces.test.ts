// A Kafka sink's transaction sent in pieces of bounded bytes (sink-manager.ts `sendPieces`): every
// message once, in order, no piece past the bound unless one message alone is.
import { describe, expect, it } from 'vitest';
import { sendPieces } from '../sink-manager.js';

const message = (id: number, bytes: number) => ({ key: `{"id":${id}}`, value: 'x'.repeat(bytes), headers: { 'oxbow.epoch': '117746041759924224' } });

describe("a Kafka sink's pieces of a transaction", () => {
  it('keeps every message once and in order, each piece within the bound', () => {
    const messages = Array.from({ length: 3000 }, (_, id) => message(id, 1000 + (id % 7) * 100));
    const pieces = sendPieces(messages, 64 * 1024);
    expect(pieces.flat()).toEqual(messages);
    expect(pieces.length).toBeGreaterThan(40);
    for (const piece of pieces) {
      const bytes = piece.reduce((sum, one) => sum + 64 + one.key.length + one.value.length + one.headers['oxbow.epoch'].length, 0);
      expect(bytes).toBeLessThanOrEqual(64 * 1024);
    }
  });

  it('sends a message bigger than the bound alone, and nothing for no message', () => {
    const pieces = sendPieces([message(1, 10), message(2, 100_000), message(3, 10)], 1000);
    expect(pieces.map((piece) => piece.map((one) => one.key))).toEqual([['{"id":1}'], ['{"id":2}'], ['{"id":3}']]);
    expect(sendPieces([])).toEqual([]);
  });
});
