// Per-thread CPU from /proc (bench/support/thread-cpu.ts): stat lines copied from a Nexmark q4 run
// at --parallelism 2 on Linux (Node.js 20) and from a thread renamed `x) (y) z`, their names and
// ticks read as the kernel wrote them, each thread put in its group, and the CPU-seconds of each
// group between two snapshots worked out by hand.
import { describe, expect, it } from 'vitest';
import { cpuSecondsByGroup, parseBlockedSignals, parseTaskStat, readCpuSnapshot, threadGroup, type CpuSnapshot, type ThreadSample } from '../support/thread-cpu.js';

const TAIL = '0 20 0 19 0 5643279 25658126336 75892 18446744073709551615 11988992 39846385 140735068753520 0 0 0 512 16781312 17922 0 0 0 -1 0 0 0 0 0 0 90418888 90555584 538296320 140735068756482 140735068756675 140735068756675 140735068757994 0';
/** The main thread (its id is the process's), utime 46, stime 4. */
const MAIN = '714 (node) S 678 673 24968 0 -1 4194304 20744 0 0 0 46 4 0 0 20 0 19 0 5643264 25658126336 75764 18446744073709551615 11988992 39846385 140735068753520 0 0 0 0 16781312 17922 1 0 0 17 0 0 0 0 0 0 90418888 90555584 538296320 140735068756482 140735068756675 140735068756675 140735068757994 0';
/** A V8 platform thread, utime 29, stime 1. */
const PLATFORM = `717 (node) R 678 673 24968 0 -1 4194368 9989 0 0 0 29 1 0 ${TAIL}`;
/** RocksDB's flush thread: no time yet. */
const ROCKSDB_HIGH = `747 (rocksdb:high) S 678 673 24968 0 -1 4194368 271 0 0 0 0 0 0 ${TAIL}`;
/** A fragment worker, utime 22, stime 2. */
const WORKER = `778 (node) S 678 673 24968 0 -1 4194368 12775 0 0 0 22 2 0 ${TAIL}`;
/** A thread named `x) (y) z` (written to /proc/thread-self/comm), 164 ticks of user time. */
const AWKWARD = '32587 (x) (y) z) R 32585 32585 24968 0 -1 4194304 2667 0 0 0 164 0 0 0 20 0 7 0 5640925 1015459840 11567 18446744073709551615 11988992 39846385 140731337439328 0 0 0 0 16781312 17922 0 0 0 17 0 0 0 0 0 0 90418888 90555584 530255872 140731337443739 140731337444042 140731337444042 140731337445354 0';

const SIGUSR1 = 0x200n;
const ALL_BUT_KILL_AND_STOP = 0xfffffffe7ffbfeffn;

describe('parseTaskStat', () => {
  it('reads the id, the name and user + system ticks', () => {
    expect(parseTaskStat(MAIN)).toEqual({ id: 714, name: 'node', ticks: 50 });
    expect(parseTaskStat(PLATFORM)).toEqual({ id: 717, name: 'node', ticks: 30 });
    expect(parseTaskStat(ROCKSDB_HIGH)).toEqual({ id: 747, name: 'rocksdb:high', ticks: 0 });
    expect(parseTaskStat(WORKER + '\n')).toEqual({ id: 778, name: 'node', ticks: 24 });
  });

  it('takes the name up to the last parenthesis, spaces and parentheses included', () => {
    expect(parseTaskStat(AWKWARD)).toEqual({ id: 32587, name: 'x) (y) z', ticks: 164 });
  });

  it('refuses a line that is not a stat line', () => {
    expect(() => parseTaskStat('714 node S 678')).toThrow(/not a \/proc stat line/);
    expect(() => parseTaskStat('714 (node) S 678 673')).toThrow(/not a \/proc stat line/);
  });
});

describe('parseBlockedSignals', () => {
  it('reads SigBlk as a bit mask', () => {
    const status = 'Name:\tnode\nSigQ:\t0/96369\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000000200\nSigIgn:\t0000000001001000\n';
    expect(parseBlockedSignals(status)).toBe(SIGUSR1);
    expect(parseBlockedSignals('SigBlk:\tfffffffe7ffbfeff\n')).toBe(ALL_BUT_KILL_AND_STOP);
    expect(parseBlockedSignals('Name:\tnode\n')).toBe(0n);
  });
});

function thread(line: string, blockedSignals: bigint, ticks?: number): ThreadSample {
  const stat = parseTaskStat(line);
  return { ...stat, ticks: ticks ?? stat.ticks, blockedSignals };
}

describe('threadGroup', () => {
  // Before the engine: the main thread, V8's platform, Node's SIGUSR1 watcher, libuv's pool.
  const startup = new Set([714, 716, 717, 722, 723]);
  const pid = 714;

  it('puts each thread of a Node.js 20 process in its group', () => {
    expect(threadGroup(thread(MAIN, 0n), pid, startup)).toBe('main');
    expect(threadGroup(thread(PLATFORM, SIGUSR1), pid, startup)).toBe('v8_platform');
    expect(threadGroup({ id: 722, name: 'node', ticks: 0, blockedSignals: ALL_BUT_KILL_AND_STOP }, pid, startup)).toBe('v8_platform');
    expect(threadGroup({ id: 723, name: 'node', ticks: 2, blockedSignals: 0n }, pid, startup)).toBe('libuv_pool');
    expect(threadGroup(thread(ROCKSDB_HIGH, 0n), pid, startup)).toBe('rocksdb');
    expect(threadGroup({ id: 745, name: 'rocksdb:low', ticks: 0, blockedSignals: 0n }, pid, startup)).toBe('rocksdb');
    expect(threadGroup(thread(WORKER, 0n), pid, startup)).toBe('workers');
  });

  it('goes by the name of a named thread, and puts unknown ones in other', () => {
    expect(threadGroup({ id: 900, name: 'V8 DefaultWorke', ticks: 0, blockedSignals: 0n }, pid, startup)).toBe('v8_platform');
    expect(threadGroup({ id: 901, name: 'libuv-worker', ticks: 0, blockedSignals: 0n }, pid, startup)).toBe('libuv_pool');
    expect(threadGroup(thread(AWKWARD, 0n), pid, startup)).toBe('other');
    // A thread started after the engine that blocks signals is none of Node's Workers.
    expect(threadGroup({ id: 902, name: 'node', ticks: 0, blockedSignals: SIGUSR1 }, pid, startup)).toBe('other');
  });
});

describe('cpuSecondsByGroup', () => {
  const startup = new Set([714, 717, 723]);
  const before: CpuSnapshot = {
    pid: 714,
    processTicks: 200,
    threads: [thread(MAIN, 0n, 100), thread(PLATFORM, SIGUSR1, 40), { id: 723, name: 'node', ticks: 10, blockedSignals: 0n }, thread(ROCKSDB_HIGH, 0n, 0), { id: 760, name: 'node', ticks: 50, blockedSignals: 0n }],
  };
  // After: main +300, platform +60, the pool +25, RocksDB +15, worker 760 ended (its 50 ticks and
  // whatever it spent since are only in the process's total), worker 778 started and spent 80.
  const after: CpuSnapshot = {
    pid: 714,
    processTicks: 700,
    threads: [thread(MAIN, 0n, 400), thread(PLATFORM, SIGUSR1, 100), { id: 723, name: 'node', ticks: 35, blockedSignals: 0n }, thread(ROCKSDB_HIGH, 0n, 15), thread(WORKER, 0n, 80)],
  };

  it('gives each group its ticks between the snapshots, in seconds', () => {
    const { groups, total } = cpuSecondsByGroup(before, after, startup, 100);
    // The process spent 700 - 200 = 500 ticks; the live threads 300 + 60 + 25 + 15 + 80 = 480; 20 by threads that ended.
    expect(total).toBe(5);
    expect(groups).toEqual({ main: 3, workers: 0.8, rocksdb: 0.15, libuv_pool: 0.25, v8_platform: 0.6, other: 0, exited: 0.2 });
  });

  it('counts no negative time for threads that ended when the live ones outran the total', () => {
    const { groups } = cpuSecondsByGroup(before, { ...after, processTicks: 650 }, startup, 100);
    expect(groups.exited).toBe(0);
  });
});

describe('readCpuSnapshot', () => {
  it('reads this process on Linux: its main thread among its threads, the total at least their sum', () => {
    const snapshot = readCpuSnapshot();
    if (process.platform !== 'linux') {
      expect(snapshot).toBeUndefined();
      return;
    }
    expect(snapshot).toBeDefined();
    const ids = snapshot!.threads.map((sample) => sample.id);
    expect(ids).toContain(process.pid);
    const live = snapshot!.threads.reduce((sum, sample) => sum + sample.ticks, 0);
    expect(snapshot!.processTicks).toBeGreaterThanOrEqual(live);
  });

  it('says nothing of a process that does not exist', () => {
    expect(readCpuSnapshot(2 ** 22 + 1)).toBeUndefined();
  });
});
