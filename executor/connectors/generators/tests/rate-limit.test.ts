// The generator reader's rate limit (generator-reader.ts) under a clock the test drives: a paced
// split produces exactly what its rate has made due, and after being held back for longer than
// MAX_BURST_SECONDS it makes up one burst and slips the rest (it never pushes the whole backlog
// into the next epochs). Expected offsets are computed from the rate by hand.
import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../../../sql/catalog.js';
import { type } from '../../../../sql/types.js';
import type { Row } from '../../../../sql/value.js';
import { GeneratorReader, MAX_BURST_SECONDS, type GeneratedRowsListener } from '../generator-reader.js';

/** A Nexmark Bid source of one split paced at `rate` events per second. */
function bidSource(rate: number): RelationDef {
  return {
    id: 20_000,
    kind: 'source',
    schema: 'public',
    name: 'bid',
    columns: [{ name: 'price', type: type('int8'), nullable: true, hidden: false }],
    primaryKey: [],
    dependsOn: [],
    options: { connector: 'nexmark', 'nexmark.table.type': 'Bid', 'nexmark.min.event.gap.in.ns': String(1e9 / rate), 'nexmark.max.chunk.size': '64' },
  };
}

/** Records the offset the reader reached; `hold` makes `generated` wait until released. */
class Recorder implements GeneratedRowsListener {
  offset = 0n;
  rows = 0;
  calls = 0;
  private held: (() => void) | undefined;
  hold = false;

  generated(_partition: number, rows: Row[], next: bigint): Promise<void> {
    this.offset = next;
    this.rows += rows.length;
    this.calls++;
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve) => (this.held = resolve));
  }

  release(): void {
    this.hold = false;
    const held = this.held;
    this.held = undefined;
    held?.();
  }

  batch(): Promise<void> {
    throw new Error('a generator hands rows, not messages');
  }

  trouble(message: string): void {
    throw new Error(message);
  }

  recovered(): void {}
  highWatermark(): void {}
}

/**
 * Waits until the reader has reached `expected` (however loaded the machine), then lets its loop run
 * a little longer, so that an overshoot (the bug this guards against) would show in the offset.
 */
async function reach(recorder: Recorder, expected: bigint): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (recorder.offset < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(recorder.offset).toBe(expected);
}

describe('generator rate limit', () => {
  it('produces what is due, and after a long hold makes up one burst and slips the rest', async () => {
    const rate = 1000;
    let now = 1_000_000;
    const reader = new GeneratorReader(bidSource(rate), () => 0n, () => now);
    const recorder = new Recorder();
    await reader.start(new Map([[0, 0n]]), recorder);
    try {
      await reach(recorder, 0n);

      // 2.5 s in steps of 250 ms (each less than the burst): 2,500 events due, all produced.
      for (let step = 1; step <= 10; step++) {
        now += 250;
        await reach(recorder, BigInt(250 * step));
      }

      // Held (the event loop busy with a long epoch) while 30 s pass: one burst is made up, not 30 s.
      recorder.hold = true;
      now += 10;
      await reach(recorder, 2_510n);
      now += 30_000;
      recorder.release();
      const burst = BigInt(rate * MAX_BURST_SECONDS);
      await reach(recorder, 2_510n + burst);

      // The schedule slipped: from here on, the rate again (0.5 s: 500 events), no leftover backlog.
      now += 500;
      await reach(recorder, 2_510n + burst + 500n);

      // A hold shorter than the burst is made up in full: nothing is lost to jitter.
      const before = recorder.offset;
      recorder.hold = true;
      now += 1;
      await reach(recorder, before + 1n);
      now += 700;
      recorder.release();
      await reach(recorder, before + 701n);
      // Bids are 46 of every 50 events: fewer rows than events, and some.
      expect(recorder.rows).toBeGreaterThan(0);
      expect(recorder.rows).toBeLessThan(Number(recorder.offset));
    } finally {
      recorder.release();
      await reader.stop();
    }
  });
});
