// The framer splits a byte stream into messages however the bytes are chunked: random message
// sequences cut at random points (fast-check) give back exactly the messages sent, including
// large ones that take the one-copy fill path; limits are enforced from the header alone.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrameError, MessageFramer } from '../../pgwire/framer.js';

function encode(type: string, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header[0] = type.charCodeAt(0);
  header.writeInt32BE(payload.length + 4, 1);
  return Buffer.concat([header, payload] as unknown as Uint8Array[]);
}

describe('MessageFramer', () => {
  it('returns the messages sent, whatever the chunking', () => {
    const messageArbitrary = fc.record({
      type: fc.constantFrom('Q', 'P', 'B', 'd', 'S'),
      // Mostly small payloads, some above the 64 KiB fill threshold.
      size: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 300 }) }, { weight: 1, arbitrary: fc.integer({ min: 64 * 1024, max: 200 * 1024 }) }),
      seed: fc.integer({ min: 0, max: 255 }),
    });
    fc.assert(
      fc.property(fc.array(messageArbitrary, { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 40 }), (messages, cuts) => {
        const payloads = messages.map((m) => Buffer.alloc(m.size, m.seed));
        const stream = Buffer.concat(messages.map((m, i) => encode(m.type, payloads[i]!)) as unknown as Uint8Array[]);
        const framer = new MessageFramer(1024 * 1024);
        framer.endStartupPhase();
        const received: { type: string; payload: Buffer }[] = [];
        let offset = 0;
        let cut = 0;
        while (offset < stream.length) {
          const size = cuts[cut++ % cuts.length]!;
          framer.push(Buffer.from(stream.subarray(offset, offset + size) as unknown as Uint8Array));
          offset += size;
          for (let frame = framer.next(); frame !== undefined; frame = framer.next()) received.push({ type: frame.type, payload: Buffer.from(frame.payload as unknown as Uint8Array) });
        }
        expect(received.map((frame) => frame.type)).toEqual(messages.map((m) => m.type));
        received.forEach((frame, i) => expect(frame.payload.equals(payloads[i]! as unknown as Uint8Array)).toBe(true));
      }),
      { numRuns: 200 },
    );
  });

  it('reads startup packets (no type byte) and refuses bad startup lengths', () => {
    const framer = new MessageFramer(1024);
    const body = Buffer.from([0, 3, 0, 0, 0]);
    const packet = Buffer.concat([Buffer.from([0, 0, 0, 9]), body] as unknown as Uint8Array[]);
    framer.push(packet);
    expect(framer.next()).toEqual({ type: '', payload: body });
    const bad = new MessageFramer(1024);
    bad.push(Buffer.from('GET / HTTP/1.1'));
    expect(() => bad.next()).toThrow(FrameError);
  });

  it('refuses an oversized message from its header, before the body arrives', () => {
    const framer = new MessageFramer(1000);
    framer.endStartupPhase();
    framer.push(encode('Q', Buffer.alloc(0)).subarray(0, 1));
    expect(framer.next()).toBeUndefined();
    const header = Buffer.alloc(4);
    header.writeInt32BE(1001);
    framer.push(header);
    expect(() => framer.next()).toThrow(expect.objectContaining({ error: expect.objectContaining({ code: '54000' }) }));
  });
});
