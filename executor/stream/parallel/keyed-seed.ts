// The seeds of a keyed fragment's shares on other nodes (executor/cluster/README.md, "Keyed
// shares"): the committed entries of the fragment's state tables, each share getting only the rows
// of the vnodes it owns (its owner in the fragment's vnode map, vnode-map.ts: the worker threads first), with every table's
// record. A row's vnode comes from the columns the planner names for its table
// (`Fragment.stateVnodes`), the same values the exchange hashes for the row's input. In a view of
// plan version 11 or later those columns are the table's vnode columns (storage/state-table.ts
// `vnodeColumns`): the key's vnode byte holds the vnode, so a vnode is a key range, the read goes
// over the ranges of the vnodes some share takes only (a seek past the others), and a row's owner
// is the map's owner of that byte. In an older view's tables every key has vnode byte 0: the whole
// table is read and the vnode is hashed from the stored row (the row codec holds every column).
// The versions of one key are adjacent, newest first, and go to one owner: a tombstone goes with
// the key's first put found after it, and a key with tombstones only (no row at any epoch) goes
// nowhere (a kept delete of a keyed table goes to its key's owner, though: a delete of nothing
// there). A table the planner names no columns for goes whole to every share.
//
// A read (KeyedSeedRead) starts at a safe point of the fragment (no epoch of it in flight, every
// epoch it wrote durable): its iterators are made then, over one snapshot, so they read the
// database as of that moment (epoch E) whatever later epochs write or compactions drop (an
// iterator pins the memtables and files it reads). It goes on in steps (`step`) while the
// fragment's old owners keep running; the packed writes they hand over for the epochs after E are
// kept (`keep`) and, when the read is done, routed after the seed (`finish`): a put by its row's
// vnode columns, a tombstone or delete with its key's owner (from a put kept before it, else from
// the key's versions at E; a key with no put anywhere goes nowhere: there is nothing to delete), a
// range delete to every share, in the order they were written. The key's versions carry their
// epochs, so the newer versions after the seed's older ones make the state as of the last kept
// epoch. What each kept key was at E (its owner then, and whether it was a row, for the shares'
// row counts) is known before the cut: a key the read has not reached when it is kept is marked by
// the step that passes it, any other is looked up at E over the read's snapshot a bounded number at
// a time (in the steps, then `settleWithin` between epochs), never all at once at the cut.
//
// A share whose node made its store from a checkpoint at epoch F >= E (`fromCheckpoints`, before
// any step: executor/cluster/keyed-share-stage.ts) gets no entry of the read (its store holds every
// table as of F) and only the kept writes of the epochs after F; a kept delete's owner is found as
// for the others (a kept put before it, else the key's versions at E), so it goes to that share only.
// When every share's store was made so, nothing is read at all. A share's store may also be made of
// SST files the leader exports out of this database over the read's snapshot (`exportRanges`: its
// vnodes' key ranges, a table keyed by vnode each): that share counts as made from a checkpoint at E.

import type { StateTableDeclaration } from '../../../planner/stream/stream-plan.js';
import type { Epoch } from '../../../sql/epoch.js';
import type { DataType } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';
import { EPOCH_SUFFIX_BYTES, TABLE_ID_BYTES, tableLowerBound, tableUpperBound, vnodeRange } from '../../../storage/mvcc-key.js';
import { tableRecordKey } from '../../../storage/mvcc-state-store.js';
import { forEachPacked, type ExportedFile, type RocksDatabase, type RocksIterator, type Snapshot } from '../../../storage/rocksdb.js';
import { decodeRowValue, ROW_TOMBSTONE, RowReader } from '../../../storage/row-codec.js';
import { BATCH_DELETE, BATCH_DELETE_RANGE, BATCH_PUT, forEachBatchEntry, WriteBatchBuilder } from '../../../storage/write-batch.js';
import { VNODE_COUNT, VnodeHasher } from './vnode.js';
import { balancedMap, type VnodeMap } from './vnode-map.js';

/** One share's seed. */
export interface KeyedSeed {
  /** Packed entries (write-batch.ts) the node's store is written with first. */
  readonly bytes: Uint8Array;
  /** Keys whose newest version is a row (the state rows the share starts with). */
  readonly rows: number;
  /** Entries (every version of those keys, the tombstones among them, and the kept epochs' writes). */
  readonly entries: number;
  /**
   * The entries read at E when they were taken before the cut (`KeyedSeedRead.takeBases`, sent to
   * the node ahead: executor/cluster/README.md, "Keyed shares"); `bytes` then holds only what goes
   * after them (the kept epochs' writes and the tables' records). A node's store is `base` then `bytes`.
   */
  readonly base?: Uint8Array;
  /** The epoch of the checkpoint the node's store was made from: `bytes` holds only the kept writes of later epochs and the tables' records. */
  readonly checkpoint?: Epoch;
}

/** A table being read: how a row's owner is found. */
interface SeedTable {
  readonly tableId: number;
  /** The vnode columns (undefined: the table goes whole to every share), their hasher, and the row's columns decoded up to the last of them. */
  readonly columns: readonly number[] | undefined;
  readonly hasher: VnodeHasher | undefined;
  readonly width: number;
  /** The key's vnode byte is the row's vnode (the table's vnode columns are `columns`): read by vnode ranges, owners from the key. */
  readonly keyed: boolean;
}

/** What a kept key's routing knows: its owner's seed (-1: no share's, or every share's for a table without vnode columns; -2: no put seen yet, its versions go nowhere), and whether it was a row at E and is now. */
interface KeptKey {
  target: number;
  readonly table: SeedTable;
  /** The key without its epoch, for the look-up at E. */
  readonly prefix: Buffer;
  /** The epoch suffix of the newest kept version, and whether that version is a row. */
  newest: Buffer;
  row: boolean;
  /** Whether the newest version at E is a row (undefined: not looked up yet). */
  rowAtStart: boolean | undefined;
}

/**
 * What a kept key was at E (found without a seek at the cut: see `keep`): whether its newest
 * version was a row, and the owner its newest put named (-2: no put at E). Undefined while unknown.
 */
interface AtStart {
  readonly table: SeedTable;
  /** The table's index (its iterator). */
  readonly index: number;
  /** The key without its epoch. */
  readonly prefix: Buffer;
  row: boolean | undefined;
  target: number;
  /** The key's first kept write was a put naming this owner (-3: it was a delete): what the cut needs of it (`needed`). */
  readonly firstTarget: number;
}

/**
 * Whether a state table's keys carry the vnode a fragment routes its rows by: its vnode columns
 * (storage/state-table.ts) are the columns `stateVnodes` names for it. Such a table's vnode is a
 * key range (storage/mvcc-key.ts `vnodeRange`).
 */
export function keyedByVnode(declaration: StateTableDeclaration, stateVnodes: ReadonlyMap<number, readonly number[]>): boolean {
  const columns = stateVnodes.get(declaration.tableId);
  return columns !== undefined && declaration.vnodeColumns !== undefined && String(declaration.vnodeColumns) === String(columns);
}

/** A look-up at E costs about this many routed entries of a step's bound (a seek skips the versions written after E, invisible to the read). */
const LOOK_UP_ENTRIES = 64;

/** Entries routed per step of a read when no bound is given (about a few milliseconds). */
export const DEFAULT_SEED_STEP_ENTRIES = 4096;

/**
 * A read of the seeds of shares `first .. owners - 1` (owner `first + i` gets seed i) of a fragment
 * whose state tables are `tables`, as `database` holds them when it is made.
 */
export class KeyedSeedRead {
  private readonly shares: number;
  private readonly first: number;
  /** The owner of each vnode. */
  private readonly map: VnodeMap;
  private readonly builders: WriteBatchBuilder[];
  private readonly rows: number[];
  private readonly entries: number[];
  private readonly tables: SeedTable[] = [];
  private readonly byId = new Map<number, SeedTable>();
  private readonly iterators: RocksIterator[] = [];
  /** Per table, the iterator of the look-ups at E (made at the first, over the same snapshot). */
  private readonly seekers: (RocksIterator | undefined)[] = [];
  private readonly records: (Buffer | undefined)[] = [];
  private snapshot: Snapshot | undefined;
  private readonly database: RocksDatabase;
  /** The table being read. */
  private at = 0;
  private table: SeedTable | undefined;
  /** The key (without its epoch suffix) of the entries being routed, and their owner's seed (-1: no share's, -2: not known yet). */
  private current = Buffer.alloc(256);
  private currentLength = -1;
  private target = -2;
  /** Tombstones of the current key before its first put (copied: the packed buffer is reused). */
  private waiting: Buffer[] = [];
  private readonly reader = new RowReader(Buffer.alloc(0));
  /** Per vnode, whether some share takes its entries from the read (made at the first step, after `fromCheckpoints`). */
  private readVnodes: Uint8Array | undefined;
  /** A keyed table's read met a vnode no share takes: after the batch, the iterator seeks to this vnode (the next one some share takes; 256: the table's end). */
  private skipTo = -1;
  /** Entries passed over by the seeks past vnodes no share takes (whole runs of them are never read). */
  skipped = 0;
  private readonly values: Value[] = [];
  private stepped = 0;
  /** The packed writes of the epochs after the read's start, with their epochs, in the order they were handed over. */
  private readonly kept: { readonly epoch: Epoch; readonly bytes: Buffer }[] = [];
  /** Per share, the checkpoint its node's store was made from (fromCheckpoints), or undefined: its seed is read. */
  private readonly checkpointed: (Epoch | undefined)[];
  /** Epochs whose writes were kept. */
  keptEpochs = 0;
  /** Entries of the kept writes routed to some share (finish). */
  keptEntries = 0;
  private closed = false;
  /**
   * Per kept key (its prefix as latin1 text), what it was at E: marked by the step when it passes
   * the key (`wanted`, per table, keys the read has not reached when they were kept), else looked
   * up through the pinned iterators, a bounded number at a time (`lookUps` queue: keys kept after
   * the read passed them), so the cut seeks nothing (executor/cluster/README.md, "Keyed shares").
   */
  private readonly atStart = new Map<string, AtStart>();
  private readonly wanted: Map<string, AtStart>[] = [];
  private wantedCount = 0;
  private readonly pending: AtStart[] = [];
  private pendingAt = 0;
  /** The kept key the step is passing (its versions at E mark it), if it was wanted. */
  private marking: AtStart | undefined;
  /** Seeks at E made for kept keys (each one the key's versions), and those of them made at the cut (`finish`). */
  lookUps = 0;
  cutLookUps = 0;
  /** Kept keys marked by the step as it passed them (no seek). */
  marked = 0;
  /** The seeds as of E, once taken (takeBases): the builders then hold what goes after them. */
  private bases: Uint8Array[] | undefined;
  done = false;

  constructor(
    database: RocksDatabase,
    tables: readonly StateTableDeclaration[],
    stateVnodes: ReadonlyMap<number, readonly number[]>,
    first: number,
    owners: number,
    /** The database's committed epoch at the read's start (E): every epoch after it is kept. */
    readonly epoch: Epoch = 0n,
    /** The owner of each vnode (vnode-map.ts; the balanced map of `owners` when not given). */
    map?: VnodeMap,
  ) {
    this.database = database;
    this.first = first;
    this.map = map ?? balancedMap(owners);
    this.shares = owners - first;
    this.builders = Array.from({ length: this.shares }, () => new WriteBatchBuilder());
    this.rows = new Array<number>(this.shares).fill(0);
    this.entries = new Array<number>(this.shares).fill(0);
    this.checkpointed = new Array<Epoch | undefined>(this.shares).fill(undefined);
    // Every iterator now, over one snapshot: the read sees the database as of this moment.
    this.snapshot = database.snapshot();
    try {
      for (const declaration of tables) {
        const columns = stateVnodes.get(declaration.tableId);
        const types: DataType[] | undefined = columns?.map((column) => declaration.columnTypes[column]!);
        const table: SeedTable = {
          tableId: declaration.tableId,
          columns,
          hasher: types === undefined ? undefined : new VnodeHasher(types),
          width: columns === undefined ? 0 : Math.max(...columns) + 1,
          keyed: keyedByVnode(declaration, stateVnodes),
        };
        this.tables.push(table);
        this.wanted.push(new Map());
        this.byId.set(table.tableId, table);
        this.iterators.push(database.iterator({ lowerBound: tableLowerBound(table.tableId), upperBound: tableUpperBound(table.tableId), snapshot: this.snapshot }));
        this.records.push(database.get(tableRecordKey(table.tableId), this.snapshot));
      }
    } catch (error) {
      this.close();
      throw error;
    }
    this.table = this.tables[0];
    if (this.table === undefined) this.done = true;
  }

  /**
   * Before the first step: the shares whose node's store was made from a checkpoint (its epoch, at
   * or past the read's start) get none of the read's entries, and of the kept writes only those of
   * later epochs. When every share's was, or owns no vnode in the read's map (a share a cut keeps
   * that gains none), there is nothing to read.
   */
  fromCheckpoints(epochs: readonly (Epoch | undefined)[]): void {
    if (this.closed) throw new Error('the seed read was closed');
    epochs.forEach((epoch, share) => {
      if (epoch === undefined || share >= this.shares) return;
      if (epoch < this.epoch) throw new Error(`checkpoint ${epoch} is older than the read's start at epoch ${this.epoch}`);
      this.checkpointed[share] = epoch;
    });
    // The vnodes the read takes are worked out again at the next step.
    this.readVnodes = undefined;
    const owns = new Uint8Array(this.shares);
    for (const owner of this.map) if (owner >= this.first) owns[owner - this.first] = 1;
    if (this.checkpointed.every((epoch, share) => epoch !== undefined || owns[share] === 0)) {
      this.done = true;
      // Nothing is read: the keys kept so far are looked up (a few at a time) instead of marked.
      for (const wanted of this.wanted) {
        for (const entry of wanted.values()) this.pending.push(entry);
        wanted.clear();
      }
      this.wantedCount = 0;
    }
  }

  /**
   * The database's entries of key ranges as the read sees them (at E, its snapshot), written into SST
   * files under `directory` on RocksDB's thread pool (storage/rocksdb.ts `exportRanges`): a share's
   * store made of files instead of this read's entries (executor/cluster/keyed-share-stage.ts), then
   * counted as made from a checkpoint at E (`fromCheckpoints`). The read may close meanwhile.
   */
  exportRanges(directory: string, ranges: readonly { readonly lower: Buffer; readonly upper: Buffer }[]): Promise<ExportedFile[]> {
    if (this.closed || this.snapshot === undefined) return Promise.reject(new Error('the seed read was closed'));
    return this.database.exportRanges(directory, ranges, this.snapshot);
  }

  /** Routes about `maxEntries` more entries of the tables (at least one); true once every table is read. */
  step(maxEntries: number): boolean {
    if (this.closed) throw new Error('the seed read was closed');
    let left = Math.max(1, maxEntries);
    // Half the bound at most for the look-ups of keys kept behind the read, the rest for the read.
    left -= this.settleWithin(Math.ceil(left / (2 * LOOK_UP_ENTRIES))) * LOOK_UP_ENTRIES;
    if (this.readVnodes === undefined) {
      const read = (this.readVnodes = new Uint8Array(VNODE_COUNT));
      for (let vnode = 0; vnode < VNODE_COUNT; vnode++) {
        const owner = this.map[vnode]!;
        if (owner >= this.first && this.checkpointed[owner - this.first] === undefined) read[vnode] = 1;
      }
    }
    while (!this.done && left > 0) {
      const iterator = this.iterators[this.at]!;
      const packed = iterator.nextPacked(Math.min(1024, left));
      if (packed === null) {
        this.passedTable(this.at);
        this.marking = undefined;
        this.at++;
        this.table = this.tables[this.at];
        this.currentLength = -1;
        this.waiting = [];
        if (this.table === undefined) this.done = true;
        continue;
      }
      this.stepped = 0;
      forEachPacked(packed, this.visit);
      left -= this.stepped;
      if (this.skipTo >= 0) {
        // Past the vnodes no share takes: the next one some share does, or the table's end.
        const tableId = this.table!.tableId;
        const target = this.skipTo < VNODE_COUNT ? vnodeRange(tableId, this.skipTo, this.skipTo + 1).lower : tableUpperBound(tableId);
        this.skipTo = -1;
        iterator.seek(target);
      }
    }
    return this.done;
  }

  /** The first vnode after `vnode` whose entries some share takes (VNODE_COUNT: none). */
  private nextRead(vnode: number): number {
    const read = this.readVnodes!;
    let next = vnode + 1;
    while (next < VNODE_COUNT && read[next] === 0) next++;
    return next;
  }

  /** The read passed the whole table `index`: a kept key it did not meet had no version at E. */
  private passedTable(index: number): void {
    const wanted = this.wanted[index]!;
    for (const entry of wanted.values()) {
      entry.row = false;
      entry.target = -2;
    }
    this.wantedCount -= wanted.size;
    wanted.clear();
  }

  /**
   * Looks up at E up to `max` kept keys the read had passed when they were kept (their versions,
   * a seek each, through the pinned iterators); the number looked up. Called by `step`, and once
   * every table is read, by the fragment between epochs until it returns 0 (`settled`).
   */
  settleWithin(max: number): number {
    if (this.closed) return 0;
    let done = 0;
    const pending = this.pending;
    while (done < max && this.pendingAt < pending.length) {
      const entry = pending[this.pendingAt++]!;
      if (entry.row !== undefined || !this.needed(entry)) continue;
      this.lookUpAt(entry);
      done++;
    }
    if (this.pendingAt === pending.length) {
      pending.length = 0;
      this.pendingAt = 0;
    }
    return done;
  }

  /** Whether kept keys are left to look up at E (the read done, a cut now would seek them). */
  get settled(): boolean {
    return this.pendingAt === this.pending.length;
  }

  /** Whether the cut needs a kept key's state at E: its owner when its first kept write was a delete, its row for a share that counts seed rows. */
  private needed(entry: AtStart): boolean {
    if (entry.table.hasher === undefined) return this.checkpointed.some((epoch) => epoch === undefined);
    if (entry.firstTarget === -3) return true;
    return entry.firstTarget >= 0 && this.checkpointed[entry.firstTarget] === undefined;
  }

  /** Routes one committed entry of the table being read. */
  private readonly visit = (buffer: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void => {
    this.stepped++;
    const table = this.table!;
    if (table.keyed) {
      const vnode = buffer[keyStart + TABLE_ID_BYTES]!;
      if (this.readVnodes![vnode] === 0) {
        // No share takes this vnode: the rest of its range (and of the ones after it no share takes) is skipped.
        this.skipped++;
        if (this.skipTo < 0) this.skipTo = this.nextRead(vnode);
        return;
      }
      // A vnode some share takes, read on in this batch: no seek (it would go back).
      this.skipTo = -1;
    }
    const tombstone = valueEnd === valueStart || buffer[valueStart] === ROW_TOMBSTONE;
    const prefixEnd = keyEnd - EPOCH_SUFFIX_BYTES;
    const prefixLength = prefixEnd - keyStart;
    const sameKey = prefixLength === this.currentLength && buffer.compare(this.current, 0, this.currentLength, keyStart, prefixEnd) === 0;
    if (!sameKey) {
      if (prefixLength > this.current.length) this.current = Buffer.alloc(prefixLength * 2);
      buffer.copy(this.current, 0, keyStart, prefixEnd);
      this.currentLength = prefixLength;
      this.target = -2;
      this.waiting = [];
      this.marking = undefined;
      if (this.wantedCount > 0) {
        // A key kept before the read reached it: its first version here is its newest at E.
        const wanted = this.wanted[this.at]!;
        const name = buffer.toString('latin1', keyStart, prefixEnd);
        const entry = wanted.get(name);
        if (entry !== undefined) {
          wanted.delete(name);
          this.wantedCount--;
          this.marked++;
          entry.row = !tombstone;
          entry.target = -2;
          this.marking = entry;
        }
      }
    }
    const builders = this.builders;
    if (table.hasher === undefined) {
      // No vnode columns: every share gets the table (one made from a checkpoint has it).
      for (let share = 0; share < this.shares; share++) {
        if (this.checkpointed[share] !== undefined) continue;
        builders[share]!.put(buffer.subarray(keyStart, keyEnd), buffer.subarray(valueStart, valueEnd));
        this.entries[share]!++;
        if (!sameKey && !tombstone) this.rows[share]!++;
      }
      return;
    }
    if (this.target === -2) {
      if (tombstone) {
        this.waiting.push(Buffer.from(buffer.subarray(keyStart, keyEnd)), Buffer.from(buffer.subarray(valueStart, valueEnd)));
        return;
      }
      // The newest put of the key: its row's vnode columns name the owner.
      this.target = this.targetOf(table, buffer, keyStart, valueStart);
      if (this.marking !== undefined) this.marking.target = this.target;
      // A share whose store a checkpoint made has the key already.
      if (this.target >= 0 && this.checkpointed[this.target] !== undefined) this.target = -1;
      if (this.target >= 0) {
        const builder = builders[this.target]!;
        const waiting = this.waiting;
        for (let at = 0; at < waiting.length; at += 2) builder.put(waiting[at]!, waiting[at + 1]!);
        this.entries[this.target]! += waiting.length / 2;
        // The first version found is the newest: a put there makes a row.
        if (waiting.length === 0) this.rows[this.target]!++;
      }
      this.waiting = [];
    }
    if (this.target < 0) return;
    builders[this.target]!.put(buffer.subarray(keyStart, keyEnd), buffer.subarray(valueStart, valueEnd));
    this.entries[this.target]!++;
  };

  /** The seed a row (its key at `keyStart`, its value at `valueStart`, in `buffer`) of `table` goes to: -1 when a thread owns it. */
  private targetOf(table: SeedTable, buffer: Buffer, keyStart: number, valueStart: number): number {
    if (table.keyed) {
      const owner = this.map[buffer[keyStart + TABLE_ID_BYTES]!]!;
      return owner >= this.first ? owner - this.first : -1;
    }
    const reader = this.reader;
    const values = this.values;
    reader.buffer = buffer;
    reader.offset = valueStart + 1;
    reader.varint();
    values.length = 0;
    for (let column = 0; column < table.width; column++) values.push(decodeRowValue(reader));
    const owner = this.map[table.hasher!.ofColumns(values, table.columns!)]!;
    return owner >= this.first ? owner - this.first : -1;
  }

  /** Keeps the packed writes (write-batch.ts) the fragment's owners handed over for an epoch after the read's start (copied). */
  keep(batches: readonly Uint8Array[], epoch: Epoch): void {
    if (this.closed) return;
    this.keptEpochs++;
    for (const batch of batches) {
      if (batch.length === 0) continue;
      const bytes = Buffer.from(batch);
      this.kept.push({ epoch, bytes });
      forEachBatchEntry(bytes, this.note);
    }
  }

  /**
   * A kept write: a key not kept before gets what it was at E from the read's step when the read
   * has not reached it yet, else from a look-up queued for `settleWithin` (never all at the cut).
   */
  private readonly note = (operation: number, buffer: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void => {
    if (operation === BATCH_DELETE_RANGE || keyEnd - keyStart < 4 + EPOCH_SUFFIX_BYTES) return;
    const table = this.byId.get(buffer.readUInt32BE(keyStart));
    if (table === undefined) return;
    const prefixEnd = keyEnd - EPOCH_SUFFIX_BYTES;
    const name = buffer.toString('latin1', keyStart, prefixEnd);
    if (this.atStart.has(name)) return;
    const put = operation === BATCH_PUT && valueEnd > valueStart && buffer[valueStart] !== ROW_TOMBSTONE;
    const index = this.tables.indexOf(table);
    // A keyed table's delete names its owner too (the key's vnode byte).
    const firstTarget = table.hasher === undefined ? -1 : put || table.keyed ? this.targetOf(table, buffer, keyStart, valueStart) : -3;
    const entry: AtStart = { table, index, prefix: Buffer.from(buffer.subarray(keyStart, prefixEnd)), row: undefined, target: -2, firstTarget };
    this.atStart.set(name, entry);
    if (this.ahead(index, entry.prefix)) {
      this.wanted[index]!.set(name, entry);
      this.wantedCount++;
    } else {
      this.pending.push(entry);
    }
  };

  /** Whether the read has not reached a key (its prefix) of table `index` yet: its step will pass it. */
  private ahead(index: number, prefix: Buffer): boolean {
    if (this.done || index < this.at) return false;
    if (index > this.at || this.currentLength < 0) return true;
    // Past the key being read; a key the current one starts (or that starts it) may sort either way with its epoch: looked up.
    const common = Math.min(prefix.length, this.currentLength);
    const order = prefix.compare(this.current, 0, common, 0, common);
    return order > 0;
  }

  /**
   * While reading (not with `takeBases`): hands `visit` the whole entries routed to share `share`
   * since the last call and empties its seed of them, for a reader that consumes them as it goes
   * (a node deleting vnodes from its store, executor/cluster/remote-share-server.ts), so they are
   * not all held at once. `visit` must not keep the bytes.
   */
  drainRouted(share: number, visit: (bytes: Buffer) => void): void {
    if (this.closed || this.bases !== undefined) throw new Error('the seed read was closed or its bases taken');
    const builder = this.builders[share]!;
    const bytes = builder.view();
    if (bytes.length === 0) return;
    visit(bytes);
    builder.reset();
  }

  /**
   * Once every table is read: each share's seed as of E (its vnodes' entries, without the tables'
   * records), to be sent ahead of the cut; `finish` then gives what goes after it. Taken once.
   */
  takeBases(): readonly Uint8Array[] {
    if (!this.done || this.closed) throw new Error('the seed read is not done');
    if (this.bases !== undefined) return this.bases;
    this.bases = this.builders.map((builder) => {
      const bytes = builder.writer.copy();
      builder.reset();
      return bytes;
    });
    return this.bases;
  }

  /** Once every table is read: each share's seed, the kept writes after it (after `base` when the bases were taken). Closes the read. */
  finish(): KeyedSeed[] {
    if (!this.done || this.closed) throw new Error('the seed read is not done');
    try {
      this.routeKept();
      // The tables' records as of the cut (the kept writes bring the state there too).
      this.tables.forEach((table, index) => {
        const record = this.database.get(tableRecordKey(table.tableId)) ?? this.records[index];
        if (record === undefined) return;
        const key = tableRecordKey(table.tableId);
        for (const builder of this.builders) builder.put(key, record);
      });
      const bases = this.bases;
      return this.builders.map((builder, share) => {
        const checkpoint = this.checkpointed[share];
        const seed: KeyedSeed = { bytes: builder.writer.copy(), rows: this.rows[share]!, entries: this.entries[share]! };
        return { ...seed, ...(bases === undefined ? {} : { base: bases[share]! }), ...(checkpoint === undefined ? {} : { checkpoint }) };
      });
    } finally {
      this.close();
    }
  }

  /** Routes the kept writes after the seed, in the order they were written. */
  private routeKept(): void {
    const keys = new Map<string, KeptKey>();
    const checkpointed = this.checkpointed;
    for (const { epoch, bytes } of this.kept) {
      // A share whose store a checkpoint at F made holds the kept epochs up to F already.
      const skip = (share: number): boolean => checkpointed[share] !== undefined && epoch <= checkpointed[share]!;
      forEachBatchEntry(bytes, (operation, buffer, keyStart, keyEnd, valueStart, valueEnd) => {
        const key = buffer.subarray(keyStart, keyEnd);
        const value = buffer.subarray(valueStart, valueEnd);
        if (operation === BATCH_DELETE_RANGE) {
          // Whole ranges (a table's cleaning or truncation): every share, in place.
          let routed = false;
          for (let share = 0; share < this.shares; share++) {
            if (skip(share)) continue;
            this.builders[share]!.deleteRange(key, value);
            this.entries[share]!++;
            routed = true;
          }
          if (routed) this.keptEntries++;
          return;
        }
        if (key.length < 4 + EPOCH_SUFFIX_BYTES) return;
        const table = this.byId.get(key.readUInt32BE(0));
        if (table === undefined) return;
        const put = operation === BATCH_PUT && value.length > 0 && value[0] !== ROW_TOMBSTONE;
        const prefix = key.subarray(0, key.length - EPOCH_SUFFIX_BYTES);
        const suffix = key.subarray(key.length - EPOCH_SUFFIX_BYTES);
        const name = prefix.toString('latin1');
        let known = keys.get(name);
        if (known === undefined) {
          let target = -2;
          if (table.hasher === undefined) target = -1;
          else if (table.keyed) target = this.targetOf(table, key, 0, 0);
          else if (put) target = this.targetOf(table, value, 0, 0);
          known = { target, table, prefix: Buffer.from(prefix), newest: Buffer.from(suffix), row: put, rowAtStart: undefined };
          keys.set(name, known);
          if (target === -2) this.fromStart(name, known);
        } else if (suffix.compare(known.newest) <= 0) {
          // Newer (the epoch is inverted) than the versions kept before.
          known.newest = Buffer.from(suffix);
          known.row = put;
        }
        if (known.target === -2 && put) known.target = this.targetOf(table, value, 0, 0);
        const targets = table.hasher === undefined ? this.shares : known.target >= 0 ? 1 : 0;
        let routed = false;
        for (let index = 0; index < targets; index++) {
          const share = table.hasher === undefined ? index : known.target;
          if (skip(share)) continue;
          const builder = this.builders[share]!;
          if (operation === BATCH_DELETE) builder.delete(key);
          else builder.put(key, value);
          this.entries[share]!++;
          routed = true;
        }
        if (routed) this.keptEntries++;
      });
    }
    // Rows counted once per key: a key kept changes a share's rows only when its newest version's kind changed since E.
    // A share made from a checkpoint counts no seed rows (they are in its checkpoint's files), so a key
    // only such shares take needs no look-up (a seek per key, on the main thread, in one go: after
    // thousands of new groups a cut spent most of 17-19 s in them at load 30, and past the 30 s stall
    // bound the leader gives its lease up).
    const counting = checkpointed.some((epoch) => epoch === undefined);
    for (const known of keys.values()) {
      if (known.table.hasher !== undefined && known.target < 0) continue;
      if (known.table.hasher === undefined ? !counting : checkpointed[known.target] !== undefined) continue;
      if (known.rowAtStart === undefined) this.fromStart(known.prefix.toString('latin1'), known);
      const change = (known.row ? 1 : 0) - (known.rowAtStart! ? 1 : 0);
      if (change === 0) continue;
      // A share made from a checkpoint counts no seed rows: they are in its checkpoint's files.
      if (known.table.hasher === undefined) {
        for (let share = 0; share < this.shares; share++) if (checkpointed[share] === undefined) this.rows[share]! += change;
      } else if (checkpointed[known.target] === undefined) {
        this.rows[known.target]! += change;
      }
    }
  }

  /** What a kept key was at E, as `keep` and the steps found it (a look-up now only if they did not: `cutLookUps`). */
  private fromStart(name: string, known: KeptKey): void {
    let entry = this.atStart.get(name);
    if (entry === undefined || entry.row === undefined) {
      entry ??= { table: known.table, index: this.tables.indexOf(known.table), prefix: known.prefix, row: undefined, target: -2, firstTarget: -3 };
      this.cutLookUps++;
      this.lookUpAt(entry);
    }
    known.rowAtStart = entry.row;
    if (known.target === -2) known.target = entry.target;
  }

  /** The key's versions at E (the pinned iterators): whether the newest is a row, and the owner its newest put names (-2: none). */
  private lookUpAt(known: AtStart): void {
    this.lookUps++;
    known.target = -2;
    // Its own iterator over the read's snapshot: the step's stays where the read is.
    let iterator = this.seekers[known.index];
    if (iterator === undefined) {
      const tableId = known.table.tableId;
      iterator = this.database.iterator({ lowerBound: tableLowerBound(tableId), upperBound: tableUpperBound(tableId), snapshot: this.snapshot });
      this.seekers[known.index] = iterator;
    }
    iterator.seek(known.prefix);
    const length = known.prefix.length;
    let first = true;
    let searching = true;
    for (let packed = iterator.nextPacked(16); searching && packed !== null; packed = searching ? iterator.nextPacked(64) : null) {
      forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
        if (!searching) return;
        if (keyEnd - keyStart - EPOCH_SUFFIX_BYTES !== length || buffer.compare(known.prefix, 0, length, keyStart, keyStart + length) !== 0) {
          searching = false;
          return;
        }
        const put = valueEnd > valueStart && buffer[valueStart] !== ROW_TOMBSTONE;
        if (first) known.row = put;
        first = false;
        if (!put) return;
        if (known.table.hasher !== undefined) known.target = this.targetOf(known.table, buffer, keyStart, valueStart);
        searching = false;
      });
    }
    // No put at E nor before (the target stays unknown until a kept put names it): a tombstone over nothing, which no share needs.
    if (first) known.row = false;
  }

  /** Closes the iterators and drops what was kept (the read is abandoned or finished). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const iterator of this.iterators) iterator.close();
    this.iterators.length = 0;
    for (const iterator of this.seekers) iterator?.close();
    this.seekers.length = 0;
    this.kept.length = 0;
    if (this.snapshot !== undefined) {
      try {
        this.database.releaseSnapshot(this.snapshot);
      } catch {
        // The database closed first: its snapshots went with it.
      }
      this.snapshot = undefined;
    }
  }
}

/**
 * The seeds of shares `first .. owners - 1` (owner `first + i` gets seed i) of a fragment whose
 * state tables are `tables`, as of `database`'s committed state, read at once.
 */
export function keyedSeeds(
  database: RocksDatabase,
  tables: readonly StateTableDeclaration[],
  stateVnodes: ReadonlyMap<number, readonly number[]>,
  first: number,
  owners: number,
  map?: VnodeMap,
): KeyedSeed[] {
  const read = new KeyedSeedRead(database, tables, stateVnodes, first, owners, 0n, map);
  try {
    while (!read.step(1 << 20));
    return read.finish();
  } finally {
    read.close();
  }
}
