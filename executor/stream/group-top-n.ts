// StreamAppendOnlyGroupTopN: `row_number() OVER (PARTITION BY p ORDER BY o) <= N` over an input
// that only inserts (planner/stream/incrementalize.ts plans it from plan version 7). A row that
// ranks below the N-th row of its partition can never come back into the top N (no row above it
// is ever deleted), so the state table keeps only the top N rows of each partition, in the keyed
// recompute's layout (`partition ++ row ++ count`; a top-1 keyed by the partition alone, so a
// partition is one point read):
//
//   for each changed partition:
//     read its kept rows (at most N) and order them
//     for each inserted row: below the N-th kept row -> dropped, never stored;
//                            else it takes its place and the N-th row, if any, falls out
//     emit, at each rank whose row changed, the old row with its rank (-) and the new one (+)
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
import { keyComparator } from '../batch/sort.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

/** A row of a partition's ranking: the row, its ORDER BY values, its state-key encoding once needed. */
interface Ranked {
  readonly row: Row;
  readonly order: Value[];
  encoded: Buffer | undefined;
  /** Its count in the state table (0: an inserted row). */
  readonly stored: number;
  /** Its count among the rows kept after the change (its own and those of equal inserted rows). */
  kept: number;
}

export class StreamAppendOnlyGroupTopNNode implements StreamNode {
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
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const out = emptyChanges();
    if (changes.rows.length === 0 || this.limit === 0) return out;
    const groups = new KeyMap<number[]>(this.keyTypes);
    const width = this.partitionEvaluators.length;
    for (let i = 0; i < changes.rows.length; i++) {
      if (changes.signs[i]! <= 0) {
        this.context.recordError(new SqlError(SqlState.internalError, 'StreamAppendOnlyGroupTopN received a deletion from an input planned as append-only'));
        continue;
      }
      const row = changes.rows[i]!;
      const key: Value[] = new Array(width);
      for (let k = 0; k < width; k++) key[k] = this.evaluate(this.partitionEvaluators[k]!, row);
      const index = groups.indexOf(key);
      if (index >= 0) groups.values[index]!.push(i);
      else groups.add(key, [i]);
    }
    const inserts = emptyChanges();
    // State writes wait until every partition has been read (a scan after a write re-sorts the
    // table's buffered keys).
    const writes: Row[] = [];
    for (let g = 0; g < groups.size; g++) this.applyPartition(groups.keys[g]!, groups.values[g]!, changes, out, inserts, writes);
    for (const stateRow of writes) {
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

  private applyPartition(key: Value[], positions: readonly number[], changes: ChangeBatch, deletes: ChangeBatch, inserts: ChangeBatch, writes: Row[]): void {
    const limit = this.limit;
    const keyWidth = key.length;
    const rowWidth = this.rowTypes.length;
    // The kept rows in state order (ties in that order), each repeated by its count, then ranked.
    const stored: Ranked[] = [];
    const before: Ranked[] = [];
    const scan = this.byPartition ? this.pointRead(key) : keyWidth === 0 ? this.table.scan() : this.table.scan({ prefix: key });
    for (const stateRow of scan) {
      if (keyWidth > 0 && !keysEqual(stateRow.slice(0, keyWidth), key, this.keyTypes)) break;
      const count = Number(stateRow[keyWidth + rowWidth] as bigint);
      if (count <= 0) continue;
      const row = stateRow.slice(keyWidth, keyWidth + rowWidth);
      const ranked: Ranked = { row, order: this.orderOf(row), encoded: undefined, stored: count, kept: 0 };
      stored.push(ranked);
      for (let n = 0; n < count; n++) before.push(ranked);
    }
    if (stored.length > 1) before.sort((a, b) => this.compareOrder(a.order, b.order));
    if (before.length > limit) before.length = limit;
    const after = before.slice();
    for (const position of positions) {
      const row = changes.rows[position]!;
      let order: Value[] | undefined;
      for (let n = changes.signs[position]!; n > 0; n--) {
        order ??= this.orderOf(row);
        const ranked: Ranked = { row, order, encoded: undefined, stored: 0, kept: 0 };
        // The first position whose row ranks after the new one (after equal rows).
        let low = 0;
        let high = after.length;
        while (low < high) {
          const middle = (low + high) >>> 1;
          if (this.compare(after[middle]!, ranked) <= 0) low = middle + 1;
          else high = middle;
        }
        if (low >= limit) break; // below the N-th row: dropped, and so are its copies
        after.splice(low, 0, ranked);
        if (after.length > limit) after.length = limit;
      }
    }
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
        deletes.rows.push([...old.row, rank]);
        deletes.signs.push(-1);
      }
      if (now !== undefined) inserts.rows.push([...now.row, rank]);
    }
    if (!changed) return;
    // The state: each kept row's count after the change; an inserted row equal to another kept
    // row (read or inserted) adds to that row's count, as the state holds one row per value.
    const inserted: Ranked[] = [];
    for (const ranked of after) {
      if (ranked.stored > 0) {
        ranked.kept++;
        continue;
      }
      const equal = stored.find((other) => keysEqual(other.row, ranked.row, this.rowTypes)) ?? inserted.find((other) => keysEqual(other.row, ranked.row, this.rowTypes));
      if (equal !== undefined) equal.kept++;
      else {
        ranked.kept = 1;
        inserted.push(ranked);
      }
    }
    if (this.byPartition) {
      // One row per partition: the new top row replaces the old one under the partition's key.
      writes.push([...key, ...after[0]!.row, 1n]);
      return;
    }
    for (const ranked of stored) if (ranked.kept !== ranked.stored) writes.push([...key, ...ranked.row, BigInt(ranked.kept)]);
    for (const ranked of inserted) writes.push([...key, ...ranked.row, BigInt(ranked.kept)]);
  }

  /** The state row of a partition when the table is keyed by the partition alone. */
  private pointRead(key: Value[]): Row[] {
    const row = this.table.get(key);
    return row === undefined ? [] : [row];
  }

  /** ORDER BY first, then the rows' state-key encodings (the keyed recompute's order of ties). */
  private compare(a: Ranked, b: Ranked): number {
    const order = this.compareOrder(a.order, b.order);
    if (order !== 0) return order;
    return Buffer.compare(this.encoding(a), this.encoding(b));
  }

  private encoding(ranked: Ranked): Buffer {
    if (ranked.encoded === undefined) {
      this.writer.reset();
      encodeKey(this.writer, ranked.row, this.rowTypes);
      ranked.encoded = this.writer.copy();
    }
    return ranked.encoded;
  }

  private orderOf(row: Row): Value[] {
    const order: Value[] = new Array(this.orderEvaluators.length);
    for (let k = 0; k < order.length; k++) order[k] = this.evaluate(this.orderEvaluators[k]!, row);
    return order;
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
