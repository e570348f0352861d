// untilCommitted (rocks-harness.ts), the wait of the source-driven parallel tests, against a stand-in
// harness whose sources commit what each case says and a clock each case moves: a round of checks
// that outlasts the stall deadline while the stream still goes on must not fail the wait (a loaded
// machine: parallel-source.test.ts failed so with its sources moving), a stream that stops must,
// with what it was at, and rounds are a step of committed events apart.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Harness } from './stream-harness.js';
import { STALL_MS, untilCommitted } from './rocks-harness.js';

/** A harness whose sources have committed `committed()` events (one partition of source `bid`). */
function standIn(committed: () => number): Harness {
  return {
    engine: { core: { store: { committedEpoch: 7n, latestEpoch: 8n, sealedEpochs: 1 }, streams: {} } },
    run: (sql: string) => Promise.resolve({ rows: [[String(committed())]], tag: sql }),
    lines: (sql: string) => Promise.resolve(sql.includes('source_partitions') ? [`bid | 0 | ${committed()} | 100 | ${committed()} | 0`] : []),
  } as unknown as Harness;
}

let now = 1_000_000;
afterEach(() => vi.restoreAllMocks());

describe('untilCommitted', () => {
  it('waits through rounds longer than the stall deadline while the sources go on', async () => {
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    let committed = 0;
    // The sources commit 5 more events between two reads of the count, 10 more during a round.
    const read = () => {
      const count = committed;
      committed = Math.min(100, committed + 5);
      return count;
    };
    const seen: number[] = [];
    const last = await untilCommitted(
      standIn(read),
      100,
      (count) => {
        seen.push(count);
        // A round of checks on a loaded machine: twice the stall deadline.
        now += 2 * STALL_MS;
        committed = Math.min(100, committed + 10);
        return Promise.resolve();
      },
      { step: 25 },
    );
    expect(last).toBe(100);
    // A round at the start, then one a step of 25 events after the last at most often, and one at the end.
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(100);
    for (let i = 1; i < seen.length - 1; i++) expect(seen[i]! - seen[i - 1]!).toBeGreaterThanOrEqual(25);
  });

  it('fails a stream that stops, with what its partitions were at', async () => {
    vi.spyOn(Date, 'now').mockImplementation(() => (now += 1_000));
    let rounds = 0;
    const wait = untilCommitted(standIn(() => 40), 100, () => Promise.resolve(void rounds++));
    await expect(wait).rejects.toThrow(new RegExp(`the sources committed 40 of 100 events and no more for ${STALL_MS / 1000} s\\n[^]*bid \\| 0 \\| 40 \\| 100[^]*store: committed epoch 7, latest 8, 1 sealed in flight`));
    expect(rounds).toBe(1);
  });
});
