// Where a sink other than Kafka delivers (target-sink.ts runs it): the target's own record of
// what it has, and the writes of one delivery round. `blackhole` (RisingWave's) is here: it
// takes every change and drops it, counting rows (oxbow_catalog.sink_status), for benchmarks of
// the dataflow alone. PostgreSQL's is postgres/postgres-sink.ts.
//
// A target is direct (`deliversDirectly`) when its delivery is local, cannot fail, and owes
// nothing after a crash: no progress of its own to resume from, no change to send again. Such a
// sink AS a query writes no change log and reads no versions: its dataflow counts the changes as
// it makes them (executor/stream/change-log.ts, DirectChanges) and each round takes those of the
// committed epochs (SINKS.md, "Direct sinks"). Only the blackhole is direct. A target that stores what it is sent (PostgreSQL, Kafka)
// needs the log: exactly once after a crash means sending again what it did not acknowledge.

import type { Epoch } from '../../sql/epoch.js';
import type { EpochChanges } from './sink-changes.js';

export interface SinkTarget {
  /** The connector's name, for sink_status. */
  readonly connector: string;
  /**
   * The epoch the target holds, given the store's record `floor` (at or below it, set before the
   * target's first delivery and moved up after deliveries): undefined means the target has
   * nothing of this sink yet, so the next delivery is the relation's contents. An epoch below
   * the floor is not this sink's progress (an older sink's of the same name, or deliveries the
   * target lost): the caller says so and sends the contents.
   */
  resume(floor: Epoch | undefined): Promise<Epoch | undefined>;
  /**
   * An upsert target's key (positions in the relation's rows). Set, write() gets the last change
   * per key instead of every change: one entry at `to`, `deletes` the keys gone and `inserts`
   * the rows to upsert, no key in both (sink-changes.ts, lastChangesBetween).
   */
  readonly upsertKey?: readonly number[];
  /**
   * Writes the changes up to `to` atomically with the target's progress `to`, or nothing; returns
   * the rows written. `from`: the progress the target must hold now (what it last wrote, or
   * resumed at); undefined when the changes are the contents at `to` (a first delivery).
   */
  write(changes: readonly EpochChanges[], from: Epoch | undefined, to: Epoch): Promise<number>;
  /** After a failed round: forget connections; the next round calls resume() again. */
  reset(): void;
  stop(): Promise<void>;
}

/** Whether a sink of these options takes its changes directly, with no change log (see the header): connector = 'blackhole'. */
export function deliversDirectly(options: Readonly<Record<string, string>> | undefined): boolean {
  return (options?.['connector'] ?? '').toLowerCase() === 'blackhole';
}

/** connector = 'blackhole': changes are counted and dropped; the store's record is its progress. */
export class BlackholeTarget implements SinkTarget {
  readonly connector = 'blackhole';

  resume(floor: Epoch | undefined): Promise<Epoch | undefined> {
    return Promise.resolve(floor);
  }

  write(changes: readonly EpochChanges[]): Promise<number> {
    let rows = 0;
    for (const change of changes) rows += change.inserts.length + change.deletes.length;
    return Promise.resolve(rows);
  }

  reset(): void {}

  stop(): Promise<void> {
    return Promise.resolve();
  }
}
