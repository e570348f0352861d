// Where a process's CPU goes, thread by thread, from Linux's /proc: each thread's user + system
// time (`/proc/<pid>/task/<tid>/stat`, in clock ticks) grouped by what the thread does, so a
// benchmark can print the CPU-seconds of its main thread, its worker threads, RocksDB's background
// threads, V8's platform threads and libuv's pool separately (nexmark.ts). Without /proc (not
// Linux) `readCpuSnapshot` returns undefined and the caller prints nothing of it.
//
// Node.js 20 names none of its threads: every thread but RocksDB's is `node`. So a `node` thread is
// told apart by when it started and by the signals it blocks (`SigBlk` in its status file):
// - the main thread's id is the process id;
// - present before the engine opened (`startup`): V8's platform threads (its worker pool: GC
//   helper threads, concurrent compilation, and the platform's delayed-task scheduler) block
//   SIGUSR1, Node's SIGUSR1 watcher blocks every signal, and libuv's thread pool (4 threads,
//   started by the ES module loader's first file read) blocks none;
// - started later and blocking no signal: a `worker_threads` Worker (the dataflow's fragment
//   workers; a Kafka reader, a cluster lease keeper), and one more unnamed thread started when
//   the database opens, idle (no tick at --parallelism 1 in the Nexmark runs of BENCHMARKS.md).
// A named thread goes by its name: RocksDB's `rocksdb:low` and `rocksdb:high`, and `V8...` and
// `libuv-worker...` for builds of Node.js that name V8's and libuv's threads.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** What a thread does, as reported (`cpu_seconds_<group>`). */
export const THREAD_GROUPS = ['main', 'workers', 'rocksdb', 'libuv_pool', 'v8_platform', 'other', 'exited'] as const;
export type ThreadGroup = (typeof THREAD_GROUPS)[number];

/** One line of /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat. */
export interface TaskStat {
  readonly id: number;
  /** The thread's name (`comm`, at most 15 bytes; it may hold spaces and parentheses). */
  readonly name: string;
  /** User + system time, in clock ticks. */
  readonly ticks: number;
}

export interface ThreadSample extends TaskStat {
  /** The signals the thread blocks (`SigBlk` of its status file), a bit per signal (bit n-1 for signal n). */
  readonly blockedSignals: bigint;
}

/** Every thread of a process at one moment, and the process's own total (which counts threads that have ended). */
export interface CpuSnapshot {
  readonly pid: number;
  /** User + system ticks of the whole process: every thread, those that ended too. */
  readonly processTicks: number;
  readonly threads: readonly ThreadSample[];
}

/**
 * A stat line: `tid (name) state ppid ...`, utime and stime its 14th and 15th fields. The name is
 * whatever sits between the first '(' and the last ')', since it may hold both.
 */
export function parseTaskStat(line: string): TaskStat {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 0 || close < open) throw new Error(`not a /proc stat line: ${JSON.stringify(line.slice(0, 80))}`);
  const id = Number(line.slice(0, open).trim());
  // After ") ": field 3 (state) onwards; field n is at index n - 3.
  const fields = line.slice(close + 2).trim().split(' ');
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isSafeInteger(id) || !Number.isSafeInteger(utime) || !Number.isSafeInteger(stime)) {
    throw new Error(`not a /proc stat line: ${JSON.stringify(line.slice(0, 80))}`);
  }
  return { id, name: line.slice(open + 1, close), ticks: utime + stime };
}

/** The `SigBlk:` mask of a /proc status file (0 when the line is missing). */
export function parseBlockedSignals(status: string): bigint {
  const match = /^SigBlk:\s*([0-9a-fA-F]+)\s*$/m.exec(status);
  return match === null ? 0n : BigInt(`0x${match[1]!}`);
}

/** Clock ticks per second (`getconf CLK_TCK`; 100 when it cannot be asked). */
let ticksPerSecondCache: number | undefined;
export function ticksPerSecond(): number {
  if (ticksPerSecondCache !== undefined) return ticksPerSecondCache;
  let ticks = 100;
  try {
    const answer = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    if (answer > 0) ticks = answer;
  } catch {
    // getconf missing: Linux's USER_HZ is 100 on every architecture Node.js runs on.
  }
  ticksPerSecondCache = ticks;
  return ticks;
}

/** The threads of `pid` now, or undefined without /proc. A thread that ends while being read is left out. */
export function readCpuSnapshot(pid: number = process.pid): CpuSnapshot | undefined {
  let ids: string[];
  try {
    ids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const threads: ThreadSample[] = [];
  for (const id of ids) {
    try {
      const stat = parseTaskStat(readFileSync(`/proc/${pid}/task/${id}/stat`, 'utf8'));
      const blockedSignals = parseBlockedSignals(readFileSync(`/proc/${pid}/task/${id}/status`, 'utf8'));
      threads.push({ ...stat, blockedSignals });
    } catch {
      // The thread ended between the listing and the read: its time is in processTicks.
    }
  }
  // Read last, so that it holds at least what the threads read before it hold.
  let processTicks: number;
  try {
    processTicks = parseTaskStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).ticks;
  } catch {
    return undefined;
  }
  return { pid, processTicks, threads };
}

const EVERY_SIGNAL_BLOCKED_FROM = 1n << 40n;

/** The group of `thread` of process `pid`; `startup` holds the ids of the threads that ran before the engine opened. */
export function threadGroup(thread: ThreadSample, pid: number, startup: ReadonlySet<number>): Exclude<ThreadGroup, 'exited'> {
  if (thread.id === pid) return 'main';
  const name = thread.name;
  if (name.startsWith('rocksdb')) return 'rocksdb';
  if (name.startsWith('V8')) return 'v8_platform';
  if (name.startsWith('libuv-worker')) return 'libuv_pool';
  if (name !== 'node') return 'other';
  if (startup.has(thread.id)) {
    if (thread.blockedSignals === 0n) return 'libuv_pool';
    // SIGUSR1 (bit 9) blocked: V8's platform threads; every signal blocked: Node's SIGUSR1 watcher, idle.
    return thread.blockedSignals >= EVERY_SIGNAL_BLOCKED_FROM || (thread.blockedSignals & (1n << 9n)) !== 0n ? 'v8_platform' : 'other';
  }
  return thread.blockedSignals === 0n ? 'workers' : 'other';
}

/**
 * CPU-seconds per group between `before` and `after` (snapshots of one process), and their sum.
 * A thread started in between counts from zero; `exited` is the process's total less every live
 * thread's: the time of threads that ended in between, and what rounding each thread's time down
 * to a tick left out (the kernel rounds the process's total once).
 */
export function cpuSecondsByGroup(before: CpuSnapshot, after: CpuSnapshot, startup: ReadonlySet<number>, ticksPerSecond: number): { groups: Record<ThreadGroup, number>; total: number } {
  const ticks = Object.fromEntries(THREAD_GROUPS.map((group) => [group, 0])) as Record<ThreadGroup, number>;
  const earlier = new Map(before.threads.map((thread) => [thread.id, thread.ticks]));
  let live = 0;
  for (const thread of after.threads) {
    const spent = thread.ticks - (earlier.get(thread.id) ?? 0);
    ticks[threadGroup(thread, after.pid, startup)] += spent;
    live += spent;
  }
  const total = after.processTicks - before.processTicks;
  ticks.exited = Math.max(0, total - live);
  const groups = Object.fromEntries(THREAD_GROUPS.map((group) => [group, ticks[group] / ticksPerSecond])) as Record<ThreadGroup, number>;
  return { groups, total: total / ticksPerSecond };
}
