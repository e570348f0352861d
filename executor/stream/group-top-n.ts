// StreamAppendOnlyGroupTopN: `row_number() OVER (PARTITION BY p ORDER BY o) <= N` over an input
// that only inserts (planner/stream/incrementalize.ts plans it from plan version 7). A row that
// ranks below the N-th row of its partition can never come back into the top N (no row above it
// is ever deleted), so the state table keeps only the top N rows of each partition, in the keyed
// recompute's layout (`partition ++ row ++ count`; a top-1 keyed by the partition alone, so a
// partition is one point read):
//
//   for each changed partition:
//     its ranking from the cache, or read its kept rows (at most N) and order them
//     for each inserted row: below the N-th kept row -> dropped, never stored;
//                            else it takes its place and the N-th row, if any, falls out
//   then for each changed partition:
//     emit, at each rank whose row changed, the old row with its rank (-) and the new one (+),
//     write the kept rows whose count changed, and cache the new ranking
//
// The cache (RisingWave's top-N cache, in its simplest form): a partition's ranking after the
// batch stays in memory, so the next batch that touches the partition ranks against it without a
// prefix scan, decoding or evaluating ORDER BY again (Nexmark q19's bids go to the hundred auctions
// in flight: most batches touch the same partitions). It mirrors the state as written in the open
// epoch: an aborted epoch drops it (`discard`), and it is dropped whole once it keeps
// `topNCache.maxRows` rows (0: no cache), or when the process's cache budget (one
// GroupCacheBudget for the join, aggregate and top-N caches, a share of --memory-limit) needs its
// bytes back: it is charged after each batch, an estimate of its rows by their layout
// (storage/row-cache.ts `rowBytes`, the first kept row's) and its partitions. A partition missing
// from it is read from state only at or below the largest partition key the cache ever dropped
// (or the table held at the first batch): above it every partition with rows is cached, so a miss
// there is a new partition with none (most of q19's auctions, first bid on while their ids stay
// below the largest auction bid on so far).
//
// The output is the window's (input row ++ row_number), as the batch Filter over Window outputs
// the rows that pass; the difference is exactly the one of the batch query before and after.
//
// Ties: rows equal on ORDER BY are ordered by their encoding in the state table's key order, the
// order the keyed recompute feeds a partition's rows to its (stable) batch window, so this node
// and StreamOverWindow keep the same rows. SQL leaves the order of such rows to the
// implementation; the batch query orders them by its scan.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { SortKey } from '../../planner/plan.js';
import type { KeyedOperator } from '../../planner/stream/stream-plan.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { StateTable } from '../../storage/state-table.js';
import { ByteWriter } from '../../storage/byte-writer.js';
import { encodeKey } from '../../storage/memcomparable.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap, keysEqual } from '../expr/row-hash.js';
import { compareValues } from '../../sql/functions.js';
import { keyComparator } from '../batch/sort.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';
import type { BudgetedCache, GroupCacheBudget } from './join-cache.js';
import { rowBytes } from '../../storage/row-cache.js';

/** A row of a partition's ranking: the row, its ORDER BY values, its state-key encoding once needed. */
interface Ranked {
  readonly row: Row;
  readonly order: Value[];
  encoded: Buffer | undefined;
  /** Its count in the state table (0: an inserted row). */
  stored: number;
  /** Its count among the rows kept after the change (its own and those of equal inserted rows). */
  kept: number;
}

/** A partition's ranking: its kept rows as in state, its ranking as in state, and after the batch. */
interface Partition {
  readonly key: Value[];
  /** The kept rows in state (each once, with its count), to write those whose count changed. */
  stored: Ranked[];
  /** The ranking in state (at most N, a row repeated by its count). */
  before: Ranked[];
  /** The ranking after the batch's rows. */
  after: Ranked[];
}

/** The cache's bound: the partitions' rankings are dropped once they keep this many rows (0: no cache). */
export const topNCache = { maxRows: 65_536 };

/** A cached kept row beyond its row: its `Ranked` entry, ORDER BY values and slot in `after` (an estimate). */
const RANKED_BYTES = 112;
/** A cached partition beyond its rows: its `Partition`, three arrays, key array and KeyMap entry (an estimate). */
const PARTITION_BYTES = 240;

export class StreamAppendOnlyGroupTopNNode implements StreamNode, BudgetedCache {
  /** Bytes the cache is charged on the process's cache budget (`charge`). */
  bytes = 0;
  /** What one kept row is charged: the first kept row's layout plus RANKED_BYTES (0 until one is kept). */
  private rowCharge = 0;
  private readonly budget: GroupCacheBudget;
  private readonly table: StateTable;
  private readonly partitionEvaluators: readonly Evaluator[];
  private readonly orderEvaluators: readonly Evaluator[];
  private readonly compareOrder: (a: readonly Value[], b: readonly Value[]) => number;
  private readonly limit: number;
  private readonly keyTypes: readonly DataType[];
  private readonly rowTypes: readonly DataType[];
  private readonly writer = new ByteWriter();
  /** The state table is keyed by the partition alone (top-1): one row per partition, read by key. */
  private readonly byPartition: boolean;
  /** A row's partition and ORDER BY values, evaluated here first and copied only when kept. */
  private readonly partitionScratch: Value[];
  private readonly orderScratch: Value[];
  /** The state-key encoding of the input row being placed, once a tie needed it. */
  private candidateEncoded: Buffer | undefined;
  /** Within one batch: the next input position of the same partition (-1 at the last). */
  private nextInPartition = new Int32Array(0);
  private readonly byOrder = (a: Ranked, b: Ranked): number => this.compareOrder(a.order, b.order);
  /** The partitions' rankings (index into `partitions`): the cache. */
  private cached: KeyMap<number>;
  private partitions: Partition[] = [];
  /** Rows the cached partitions keep (the cache's bound). */
  private cachedRows = 0;
  /** The partitions the batch changes (indexes into `partitions`). */
  private readonly changed: number[] = [];
  /**
   * Every partition with state whose key encodes above this is cached, so a miss above it has no
   * rows and reads nothing (a new auction of q19 in flight below the table's largest key): null
   * while every partition is (a table empty at the first batch, or nothing dropped since), raised
   * to the largest dropped key at each drop; undefined before the first batch and without a
   * partition key.
   */
  private cachedAbove: Buffer | null | undefined;
  private boundRead = false;

  constructor(plan: KeyedOperator, private readonly context: StreamContext) {
    const topN = plan.groupTopN;
    if (topN === undefined) throw new SqlError(SqlState.internalError, 'StreamAppendOnlyGroupTopN without its ORDER BY and limit');
    this.table = context.stateTable(plan.stateTables[0]!);
    const partition = plan.keys[0]!;
    this.partitionEvaluators = partition.map(compile);
    this.keyTypes = partition.map((key) => key.type);
    const orderBy: readonly SortKey[] = topN.orderBy;
    this.orderEvaluators = orderBy.map((key) => compile(key.expression));
    this.compareOrder = keyComparator(orderBy);
    this.limit = topN.limit;
    this.byPartition = plan.stateTables[0]!.primaryKey.length === partition.length && partition.length > 0;
    this.rowTypes = plan.inputs[0]!.columns.map((column) => column.type);
    this.partitionScratch = new Array<Value>(partition.length);
    this.orderScratch = new Array<Value>(orderBy.length);
    // A partition of N > 1 rows is read by a prefix scan, which never reads the row cache: its
    // written rows would only fill (and evict from) the cache. A top-1 reads its row by key.
    if (!this.byPartition) this.table.writeAround?.();
    this.cached = new KeyMap<number>(this.keyTypes);
    this.budget = context.groupCaches;
    this.budget.register(this);
  }

  /** The open epoch was aborted: the cached rankings (as written in it) go. */
  discard(): void {
    this.dropCache();
  }

  dispose(): void {
    this.dropCache();
    this.budget.unregister(this);
  }

  /** The budget needs bytes back: the cache goes whole (between batches: `charge` runs after `emit`). */
  evictOldest(_budget: GroupCacheBudget): void {
    this.dropCache();
  }

  /** Charges the cache's bytes after a batch; over the budget, the largest caches give back first (this one too). */
  private charge(): void {
    if (this.rowCharge === 0 && this.partitions.length > 0) {
      for (let p = 0; p < this.partitions.length && this.rowCharge === 0; p++) {
        const first = this.partitions[p]!.after[0];
        if (first !== undefined) this.rowCharge = rowBytes(first.row) + RANKED_BYTES;
      }
    }
    const bytes = this.cachedRows * this.rowCharge + this.partitions.length * PARTITION_BYTES;
    const grown = bytes - this.bytes;
    this.bytes = bytes;
    this.budget.usedBytes += grown;
    if (grown > 0 && this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const out = emptyChanges();
    const count = changes.rows.length;
    if (count === 0 || this.limit === 0) return out;
    // The batch's partitions, each with its first and last input position; the positions of one
    // partition are chained through nextInPartition (no array per partition).
    const groups = new KeyMap<number>(this.keyTypes);
    const lasts: number[] = [];
    const hashes: number[] = [];
    if (this.nextInPartition.length < count) this.nextInPartition = new Int32Array(Math.max(count, 2 * this.nextInPartition.length));
    const next = this.nextInPartition;
    const key = this.partitionScratch;
    const width = key.length;
    for (let i = 0; i < count; i++) {
      if (changes.signs[i]! <= 0) {
        this.context.recordError(new SqlError(SqlState.internalError, 'StreamAppendOnlyGroupTopN received a deletion from an input planned as append-only'));
        continue;
      }
      const row = changes.rows[i]!;
      for (let k = 0; k < width; k++) key[k] = this.evaluate(this.partitionEvaluators[k]!, row);
      const hash = groups.hash(key);
      const index = groups.indexOf(key, hash);
      next[i] = -1;
      if (index >= 0) {
        next[lasts[index]!] = i;
        lasts[index] = i;
      } else {
        groups.add(key.slice(), i, hash);
        lasts.push(i);
        hashes.push(hash);
      }
    }
    if (!this.boundRead) this.readBound();
    // The cache's bound, before the batch's partitions are looked up in it.
    if (this.cachedRows + groups.size * this.limit > topNCache.maxRows) this.dropCache();
    // Every partition is read before any is written (a scan after a write re-sorts the table's
    // buffered keys): writes wait for the output.
    for (let g = 0; g < groups.size; g++) this.rankPartition(groups.keys[g]!, hashes[g]!, groups.values[g]!, changes);
    return this.emit();
  }

  /** Ranks a batch's rows of one partition (chained from `first`) into its ranking: cached, or read from state. */
  private rankPartition(key: Value[], hash: number, first: number, changes: ChangeBatch): void {
    const limit = this.limit;
    let index = this.cached.indexOf(key, hash);
    if (index < 0) {
      index = this.partitions.length;
      this.cached.add(key, index, hash);
      const above = this.cachedAbove;
      const empty = above === null || (above !== undefined && Buffer.compare(this.encodedPartition(key), above) > 0);
      this.partitions.push(empty ? { key, stored: [], before: [], after: [] } : this.read(key));
      this.cachedRows += this.partitions[index]!.after.length;
    }
    this.changed.push(index);
    const after = this.partitions[index]!.after;
    const kept = after.length;
    const order = this.orderScratch;
    for (let position = first; position >= 0; position = this.nextInPartition[position]!) {
      const row = changes.rows[position]!;
      for (let k = 0; k < order.length; k++) order[k] = this.evaluate(this.orderEvaluators[k]!, row);
      this.candidateEncoded = undefined;
      let ranked: Ranked | undefined;
      for (let n = changes.signs[position]!; n > 0; n--) {
        // The first position whose row ranks after the new one (after equal rows).
        let low = 0;
        let high = after.length;
        while (low < high) {
          const middle = (low + high) >>> 1;
          if (this.compareCandidate(after[middle]!, order, row) <= 0) low = middle + 1;
          else high = middle;
        }
        if (low >= limit) break; // below the N-th row: dropped, and so are its copies
        // Copies of one row are one Ranked: equal rows count once in the state (`kept`).
        ranked ??= { row, order: order.slice(), encoded: this.candidateEncoded, stored: 0, kept: 0 };
        after.splice(low, 0, ranked);
        if (after.length > limit) after.length = limit;
      }
    }
    this.cachedRows += after.length - kept;
  }

  /** A partition's kept rows from state: in state order (ties in that order), each repeated by its count, then ranked. */
  private read(key: Value[]): Partition {
    const keyWidth = key.length;
    const rowWidth = this.rowTypes.length;
    const stored: Ranked[] = [];
    const before: Ranked[] = [];
    if (this.byPartition) {
      const stateRow = this.table.get(key);
      if (stateRow !== undefined) this.readStored(stateRow, keyWidth, rowWidth, stored, before);
    } else {
      for (const stateRow of keyWidth === 0 ? this.table.scan() : this.table.scan({ prefix: key })) {
        if (!this.inPartition(stateRow, key)) break;
        this.readStored(stateRow, keyWidth, rowWidth, stored, before);
      }
    }
    if (stored.length > 1) before.sort(this.byOrder);
    if (before.length > this.limit) before.length = this.limit;
    return { key, stored, before, after: before.slice() };
  }

  /** The batch's changed partitions: their output (deletions first) and state writes; their rankings cached. */
  private emit(): ChangeBatch {
    const out = emptyChanges();
    const changed = this.changed;
    if (changed.length === 0) return out;
    const inserts = emptyChanges();
    const writes: Row[] = [];
    for (let c = 0; c < changed.length; c++) this.outputPartition(this.partitions[changed[c]!]!, out, inserts, writes);
    changed.length = 0;
    if (topNCache.maxRows === 0) this.dropCache();
    else this.charge();
    for (let w = 0; w < writes.length; w++) {
      const stateRow = writes[w]!;
      if ((stateRow[stateRow.length - 1] as bigint) > 0n) this.table.insert(stateRow);
      else this.table.delete(stateRow);
    }
    // Deletions first, so a consumer sees a row leave before its replacement arrives.
    for (let i = 0; i < inserts.rows.length; i++) {
      out.rows.push(inserts.rows[i]!);
      out.signs.push(1);
    }
    return out;
  }

  /** At the first batch: the table's largest partition, above which none has rows (null: an empty table). */
  private readBound(): void {
    this.boundRead = true;
    if (this.keyTypes.length === 0) return;
    let last: Row | undefined;
    for (const stateRow of this.table.scan({ reverse: true, limit: 1 })) last = stateRow;
    this.cachedAbove = last === undefined ? null : this.encodePartition(last.slice(0, this.keyTypes.length));
  }

  private encodePartition(key: readonly Value[]): Buffer {
    this.encodedPartition(key);
    return this.writer.copy();
  }

  /** The key's encoding in the writer's buffer (a view, valid until the writer's next use). */
  private encodedPartition(key: readonly Value[]): Buffer {
    this.writer.reset();
    encodeKey(this.writer, key, this.keyTypes);
    return this.writer.view();
  }

  private dropCache(): void {
    this.changed.length = 0;
    this.budget.usedBytes -= this.bytes;
    this.bytes = 0;
    if (this.partitions.length === 0) return;
    // The dropped partitions may have rows: misses at or below the largest of them read state.
    if (this.cachedAbove !== undefined) {
      let above = this.cachedAbove;
      for (let p = 0; p < this.partitions.length; p++) {
        const encoded = this.encodedPartition(this.partitions[p]!.key);
        if (above === null || Buffer.compare(encoded, above) > 0) above = Buffer.from(encoded);
      }
      this.cachedAbove = above;
    }
    this.cached = new KeyMap<number>(this.keyTypes);
    this.partitions = [];
    this.cachedRows = 0;
  }

  /**
   * A changed partition's output (the ranks whose row changed) and its state writes (the kept rows
   * whose count changed); its ranking after the batch becomes the one in state.
   */
  private outputPartition(partition: Partition, deletes: ChangeBatch, inserts: ChangeBatch, writes: Row[]): void {
    const { key, stored, before, after } = partition;
    // The ranks whose row changed: the old row with its rank out, the new one in.
    const length = Math.max(before.length, after.length);
    let changed = false;
    for (let p = 0; p < length; p++) {
      const old = before[p];
      const now = after[p];
      if (old !== undefined && now !== undefined && (old === now || keysEqual(old.row, now.row, this.rowTypes))) continue;
      changed = true;
      const rank = BigInt(p + 1);
      if (old !== undefined) {
        deletes.rows.push(withRank(old.row, rank));
        deletes.signs.push(-1);
      }
      if (now !== undefined) inserts.rows.push(withRank(now.row, rank));
    }
    if (!changed) {
      // The same rows at every rank: the state stays, and so does the ranking as it was.
      partition.after = before.slice();
      return;
    }
    // The state: each kept row's count after the change; an inserted row equal to another kept
    // row (read or inserted) adds to that row's count, as the state holds one row per value (and
    // the ranking takes that row in its place).
    const inserted: Ranked[] = [];
    for (let p = 0; p < after.length; p++) {
      const ranked = after[p]!;
      if (ranked.stored > 0 || ranked.kept > 0) {
        ranked.kept++;
        continue;
      }
      const equal = this.equalRow(stored, ranked.row) ?? this.equalRow(inserted, ranked.row);
      if (equal !== undefined) {
        equal.kept++;
        after[p] = equal;
      } else {
        ranked.kept = 1;
        inserted.push(ranked);
      }
    }
    const now: Ranked[] = [];
    if (this.byPartition) {
      // One row per partition: the new top row replaces the old one under the partition's key.
      writes.push(stateRowOf(key, after[0]!.row, 1n));
    } else {
      for (let s = 0; s < stored.length; s++) {
        const ranked = stored[s]!;
        if (ranked.kept !== ranked.stored) writes.push(stateRowOf(key, ranked.row, BigInt(ranked.kept)));
      }
      for (let s = 0; s < inserted.length; s++) writes.push(stateRowOf(key, inserted[s]!.row, BigInt(inserted[s]!.kept)));
    }
    // The ranking after the batch is the one in state now.
    for (let s = 0; s < stored.length; s++) if (stored[s]!.kept > 0) now.push(stored[s]!);
    for (let s = 0; s < inserted.length; s++) now.push(inserted[s]!);
    for (let s = 0; s < now.length; s++) {
      const ranked = now[s]!;
      ranked.stored = this.byPartition ? 1 : ranked.kept;
      ranked.kept = 0;
    }
    for (let s = 0; s < stored.length; s++) stored[s]!.kept = 0;
    partition.stored = now;
    partition.before = after;
    partition.after = after.slice();
  }

  /** A state row of the partition (`partition ++ row ++ count`) into `stored` and, by its count, `before`. */
  private readStored(stateRow: Row, keyWidth: number, rowWidth: number, stored: Ranked[], before: Ranked[]): void {
    const count = Number(stateRow[keyWidth + rowWidth] as bigint);
    if (count <= 0) return;
    const row: Row = new Array(rowWidth);
    for (let c = 0; c < rowWidth; c++) row[c] = stateRow[keyWidth + c]!;
    const order: Value[] = new Array(this.orderEvaluators.length);
    for (let k = 0; k < order.length; k++) order[k] = this.evaluate(this.orderEvaluators[k]!, row);
    const ranked: Ranked = { row, order, encoded: undefined, stored: count, kept: 0 };
    stored.push(ranked);
    for (let n = 0; n < count; n++) before.push(ranked);
  }

  /** Whether a state row's leading columns are the partition's key. */
  private inPartition(stateRow: Row, key: readonly Value[]): boolean {
    for (let k = 0; k < key.length; k++) {
      const x = stateRow[k]!;
      const y = key[k]!;
      if (x === y) continue;
      if (x === null || y === null || compareValues(x, y, this.keyTypes[k]!) !== 0) return false;
    }
    return true;
  }

  /** The entry of `rankings` whose row equals `row`, if any. */
  private equalRow(rankings: readonly Ranked[], row: Row): Ranked | undefined {
    for (let r = 0; r < rankings.length; r++) if (keysEqual(rankings[r]!.row, row, this.rowTypes)) return rankings[r];
    return undefined;
  }

  /** A kept row against the input row being placed: ORDER BY first, then the state-key encodings (the keyed recompute's order of ties). */
  private compareCandidate(kept: Ranked, order: readonly Value[], row: Row): number {
    const byOrder = this.compareOrder(kept.order, order);
    if (byOrder !== 0) return byOrder;
    this.candidateEncoded ??= this.encode(row);
    return Buffer.compare(this.encoding(kept), this.candidateEncoded);
  }

  private encoding(ranked: Ranked): Buffer {
    ranked.encoded ??= this.encode(ranked.row);
    return ranked.encoded;
  }

  private encode(row: Row): Buffer {
    this.writer.reset();
    encodeKey(this.writer, row, this.rowTypes);
    return this.writer.copy();
  }

  private evaluate(evaluator: Evaluator, row: Row): Value {
    try {
      return evaluator(row, this.context.runtime);
    } catch (error) {
      this.context.recordError(error);
      return null;
    }
  }
}

/** An output row: the input row and its row_number. */
function withRank(row: Row, rank: bigint): Row {
  const width = row.length;
  const out: Row = new Array(width + 1);
  for (let c = 0; c < width; c++) out[c] = row[c]!;
  out[width] = rank;
  return out;
}

/** A state row: `partition ++ row ++ count`. */
function stateRowOf(key: readonly Value[], row: Row, count: bigint): Row {
  const keyWidth = key.length;
  const width = row.length;
  const out: Row = new Array(keyWidth + width + 1);
  for (let k = 0; k < keyWidth; k++) out[k] = key[k]!;
  for (let c = 0; c < width; c++) out[keyWidth + c] = row[c]!;
  out[keyWidth + width] = count;
  return out;
}
