// The state contract: the only way operators, tables and views touch storage. Two
// implementations follow it: the MVCC store on RocksDB, and an in-memory one for fast unit tests.
//
// A state table holds rows keyed by their primary-key columns. Writes go to the open epoch's
// buffer; StateStore.commit(epoch) makes every table's buffered writes durable and visible in
// one atomic write, together with that epoch's metadata (source offsets, catalog changes).
// Reads at an epoch see the newest version at or before it ("AS OF").

import type { DataType } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import type { Epoch } from '../sql/epoch.js';

export interface StateTableSchema {
  /** Unique id of the table in the store (a relation id, or an operator's state table id). */
  readonly tableId: number;
  readonly columnTypes: readonly DataType[];
  /** Indexes into the row of the key columns, in key order. */
  readonly primaryKey: readonly number[];
  /** Time-travel retention in milliseconds; undefined: the store's default. */
  readonly retentionMs?: number;
  /**
   * A table of a few small records rewritten every epoch (a replayed source's positions): on
   * RocksDB it lives beside the store's own records in their column family, apart from the
   * growing tables, whose flushed files then move down the LSM without rewrites (DESIGN.md §6).
   * Fixed for the table's life.
   */
  readonly records?: boolean;
  /**
   * Key columns (indexes into the row, each one of `primaryKey`'s) whose values, hashed in this
   * order (vnode-hash.ts), give the vnode byte of each row's key (mvcc-key.ts): a keyed fragment's
   * state, whose vnodes are then key ranges a node can read or drop whole. The table's rows sort by
   * (vnode, key): a scan by a key prefix holding these columns reads one vnode in key order; a
   * whole-table scan reads the vnodes one after another; a scan between `start` and `end` is not
   * served. Undefined: every key under vnode 0, the table in key order. Fixed for the table's life.
   */
  readonly vnodeColumns?: readonly number[];
}

export interface ScanOptions {
  /** Read as of this committed epoch; default: latest, including this table's uncommitted writes. */
  readonly epoch?: Epoch;
  /** Inclusive lower bound on a prefix of the key columns. */
  readonly start?: Row;
  /** Exclusive upper bound on a prefix of the key columns. */
  readonly end?: Row;
  /**
   * Only rows whose leading key columns equal these (a key group): the scan's upper bound is the
   * group's end, so the store reads no entry past it. Replaces `start` and `end`.
   */
  readonly prefix?: Row;
  readonly reverse?: boolean;
  readonly limit?: number;
}

export interface RowVersion {
  readonly row: Row;
  /** Epoch that wrote this version. */
  readonly validFrom: Epoch;
  /** Epoch that replaced or deleted it; null while it is current. */
  readonly validTo: Epoch | null;
}

export interface StateTable {
  readonly schema: StateTableSchema;
  /** The row with this key (key columns in key order), or undefined. */
  get(key: Row, epoch?: Epoch): Row | undefined;
  /** Rows in key order. */
  scan(options?: ScanOptions): Iterable<Row>;
  /** Every version valid at some point in [from, to] (FOR SYSTEM_TIME BETWEEN). */
  versions(from: Epoch, to: Epoch, options?: Omit<ScanOptions, 'epoch'>): Iterable<RowVersion>;
  /** Upsert by primary key into the open epoch. */
  insert(row: Row): void;
  /** Deletes by primary key (the row's key columns) in the open epoch. */
  delete(row: Row): void;
  /**
   * insert() (an upsert, in order with the table's other writes) for rows seldom read back before
   * their commit, such as a view's blind inserts under unique ids: the store may key them only when
   * read or committed. Optional: callers insert() without it.
   */
  append?(row: Row): void;
  /**
   * Deletes every row whose key sorts below `end` (a prefix of the key columns, in key order) in
   * the open epoch as one range delete: no tombstone per key. Reads of the latest state and AS OF
   * that epoch or later see none of them; reads AS OF an earlier epoch still do, within the
   * retention (the rows leave the backend once the table's GC watermark passes the epoch). The
   * caller writes no key below `end` again (a window the watermark closed): such a write fails.
   * Optional: a store without it has the caller delete row by row.
   */
  deleteBelow?(end: Row): void;
  /** Approximate bytes and keys, for system tables and metrics. */
  stats(): { readonly bytes: number; readonly keys: number };
  /**
   * From now on, rows written are not added to the memory tier when their epoch is published (an
   * entry already cached for the key is dropped): for rows written once and seldom read back by
   * key, such as a view's blind inserts, whose write-through only grew the cache (and the GC's
   * work). Optional: a store without a memory tier has nothing to skip.
   */
  writeAround?(): void;
  /** Another thread's store committed rows of this table: latest reads forget cached committed state. */
  committedElsewhere?(): void;
  /**
   * True when no row whose key starts with `prefix` exists or existed (the prefix sorts above every
   * key the table holds or held): a key group known empty without a read (a join caching a new
   * key's group). Optional: a store that cannot tell answers nothing, and callers read.
   */
  prefixIsNew?(prefix: Row): boolean;
  /**
   * Deletes every row whose key sorts below `end` (a prefix of the key columns) with its whole
   * history, in the open epoch's commit: no tombstone versions, one range delete (a sink's change
   * log trimmed after delivery, executor/connectors/sink-log.ts). Meant for tables read through
   * versions() and AS OF only: until the commit is durable, latest reads may still see those rows.
   * Optional: callers without it keep the rows.
   */
  truncate?(end: Row): void;
}

/** What a history hold keeps (StateStore.holdHistory). */
export type HistoryHold = { readonly fromEpoch: Epoch } | { readonly retentionMs: number };

export interface ReadableWindow {
  /** Oldest epoch still readable (older versions may have been garbage-collected). */
  readonly oldest: Epoch;
  /** Last committed epoch. */
  readonly latest: Epoch;
}

export interface StateStore {
  /** Opens (or creates) a state table; the same id returns the same table. */
  table(schema: StateTableSchema): StateTable;
  /** Deletes a table's every version (DROP); takes effect at the next commit. */
  dropTable(tableId: number): void;
  /** Durable metadata committed with epochs (catalog log, source offsets): latest value. */
  getMeta(key: string): Uint8Array | undefined;
  /** Buffers a metadata write into the open epoch. */
  putMeta(key: string, value: Uint8Array): void;
  /**
   * Writes a metadata record durably now, outside the epochs (never rolled back by abort); for a
   * key putMeta does not write. Optional: a store without it cannot keep sequences across a crash.
   */
  putMetaNow?(key: string, value: Uint8Array): void;
  /**
   * Atomically commits every buffered write at `epoch` (strictly greater than the last), on the
   * main thread; only while no commitAsync() is in flight.
   */
  commit(epoch: Epoch): void;
  /**
   * Seals the open epoch as `epoch` (greater than `latestEpoch`) and opens the next at once; the
   * sealed writes stay visible to reads of the latest state. Resolves when the epoch is durable
   * (then `committedEpoch` reaches it); rejects with the write's SqlError, after which the store
   * takes no more commits.
   */
  commitAsync(epoch: Epoch): Promise<void>;
  /** Resolves once every sealed epoch's write has settled. */
  settled(): Promise<void>;
  /** Resolves when few enough epochs are in flight to seal another (back-pressure). */
  whenWritable(): Promise<void>;
  /** Drops the open epoch's buffered writes (a failed statement). */
  abort(): void;
  /** The last durable epoch: what AS OF reads and statement snapshots see. */
  readonly committedEpoch: Epoch;
  /** The last sealed epoch (committedEpoch, or later while commits are in flight). */
  readonly latestEpoch: Epoch;
  readableWindow(tableId: number): ReadableWindow;
  /**
   * Keeps history of table `tableId` readable past the table's own retention, under the name
   * `holder` (one hold per holder and table; `undefined` releases it). Two kinds:
   * `{ fromEpoch }` keeps every version from that epoch on (a sink's undelivered changes);
   * `{ retentionMs }` keeps at least that much history back from each commit (a subscription).
   * At each commit the table's GC watermark is its retention (the longest of its own and the
   * `retentionMs` holds) back from the commit, capped by the lowest `fromEpoch` hold, and never
   * moves back. History already collected does not come back. Holds are not persisted: their
   * owners set them again after opening the store, before anything commits.
   */
  holdHistory(holder: string, tableId: number, hold: HistoryHold | undefined): void;
  close(): Promise<void>;
}
