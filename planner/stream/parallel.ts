// Which parts of a streaming plan run in worker threads at --parallelism N > 1
// (executor/stream/PARALLEL.md), decided here so that EXPLAIN and the running dataflow agree.
//
// The plan is cut into fragments at its distribution changes. A fragment is a subtree of stateful
// operators that partition by key (a hash aggregate grouped by input columns, a hash join on
// column keys) with the linear operators between and above them (filters, projections, LATERALs
// such as HOP); each of its inputs (the nodes below the cut) reaches the N workers through a hash
// exchange on the columns the operator above it keys by, so every key group lives in one worker,
// and each worker runs the whole fragment over its share. An operator whose input is already
// distributed by a subset of its own key (an aggregate grouped by the join key's columns over the
// join) stays in the same fragment; one keyed otherwise (q4's average per category over the max
// per auction) starts a fragment of its own behind a new exchange, fed by the main thread.
//
// `fragmentAt` is asked top-down (the dataflow places the root first): the first node of a chain
// that can run in a fragment roots one; the nodes below its cuts are asked in turn.

import { type as scalar, type DataType } from '../../sql/types.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { Expression } from '../expression.js';
import { streamInputRelationId, streamInputs, type StreamPlan } from './stream-plan.js';
import { carriesRowIds } from './unique-key.js';
import { toTransfer } from './plan-transfer.js';

export type HashAggregatePlan = Extract<StreamPlan, { kind: 'StreamHashAggregate' }>;
export type HashJoinPlan = Extract<StreamPlan, { kind: 'StreamHashJoin' }>;

/** One input of a fragment: a node below the cut and the columns of its rows the exchange hashes. */
export interface FragmentInput {
  readonly plan: StreamPlan;
  readonly key: readonly number[];
}

export interface Fragment {
  readonly root: StreamPlan;
  /** The fragment's own nodes, root first (pre-order). */
  readonly nodes: readonly StreamPlan[];
  /** The cut inputs, in the order the fragment's tree reaches them (left to right). */
  readonly inputs: readonly FragmentInput[];
  /**
   * Per state table of the fragment's nodes (by table id): the columns of its rows whose values,
   * hashed in order (parallel/vnode.ts), give the vnode the exchange routes the rows of that state
   * to, so a row's owner follows from the row (a keyed share's seed takes only its vnodes' rows).
   * A table missing here has rows of every owner.
   */
  readonly stateVnodes: ReadonlyMap<number, readonly number[]>;
}

/**
 * How a fragment's output rows are spread over the workers: per hashed key column, the output
 * positions holding its value (equal values: an inner join's key on both sides). Undefined: by
 * nothing an operator above can use.
 */
type Distribution = readonly (readonly number[])[] | undefined;

/** What a subtree adds to a fragment under construction (committed only when it fits). */
interface Part {
  readonly nodes: StreamPlan[];
  readonly inputs: FragmentInput[];
  /** Per state table, the columns hashed for its rows' vnode (`Fragment.stateVnodes`). */
  readonly vnodes: Map<number, readonly number[]>;
}

/** Nodes a StreamShared leaf reads (share.ts): they stay where the dataflow places them. */
export function sharedSources(plan: StreamPlan, out = new Set<StreamPlan>()): Set<StreamPlan> {
  if (plan.kind === 'StreamShared') out.add(plan.source);
  for (const input of streamInputs(plan)) sharedSources(input, out);
  return out;
}

/** Why a stateful node cannot run in a fragment, or undefined when it can. */
export function serialReason(plan: StreamPlan): string | undefined {
  switch (plan.kind) {
    case 'StreamHashAggregate':
      if (plan.groupKeys.length === 0) return 'no group key';
      if (!plan.groupKeys.every((key) => key.kind === 'Column')) return 'a group key is not an input column';
      // State cleaning reads the watermark tables of the view's sources, which only the main thread has.
      if (plan.clean !== undefined) return 'its state is cleaned by watermark';
      return undefined;
    case 'StreamHashJoin': {
      if (plan.clean !== undefined) return 'its state is cleaned by watermark';
      if (plan.keys[0]!.length === 0) return 'no equi-key';
      for (let i = 0; i < plan.keys[0]!.length; i++) {
        const l = plan.keys[0]![i]!;
        const r = plan.keys[1]![i]!;
        if (l.kind !== 'Column' || r.kind !== 'Column') return 'a join key is not an input column';
        if (!sameHash(plan.inputs[0]!.columns[l.index]!.type, plan.inputs[1]!.columns[r.index]!.type)) return 'the join keys differ in type';
      }
      return undefined;
    }
    default:
      return 'not a hash aggregate or hash join';
  }
}

/**
 * Names the vnode columns of every keyed fragment's state tables in `plan` (a view of plan
 * version 11 or later, stream-plan.ts): each table's `stateVnodes` entry, the fragments found as
 * the dataflow finds them (top-down, each fragment's cut inputs asked in turn), whatever the
 * parallelism the view will run at, so its state's keys carry the vnode its exchange routes them
 * by. The declarations are the planner's own, new with `plan`: they are written in place.
 */
export function withVnodeColumns(plan: StreamPlan): StreamPlan {
  const shared = sharedSources(plan);
  const columns = new Map<number, readonly number[]>();
  const seen = new Set<StreamPlan>();
  const visit = (node: StreamPlan): void => {
    if (seen.has(node)) return;
    seen.add(node);
    const fragment = fragmentAt(node, shared);
    if (fragment === undefined) {
      for (const input of streamInputs(node)) visit(input);
      if (node.kind === 'StreamShared') visit(node.source);
      return;
    }
    for (const [table, vnodes] of fragment.stateVnodes) columns.set(table, vnodes);
    for (const input of fragment.inputs) visit(input.plan);
  };
  visit(plan);
  const name = (node: StreamPlan): void => {
    for (const declaration of node.stateTables) {
      const vnodes = columns.get(declaration.tableId);
      // Only key columns can name a key's vnode.
      if (vnodes !== undefined && vnodes.every((column) => declaration.primaryKey.includes(column))) (declaration as { vnodeColumns?: readonly number[] }).vnodeColumns = vnodes;
    }
  };
  walkAll(plan, name);
  return plan;
}

/** Calls `visit` on `plan` and every node below it (shared subtrees included). */
function walkAll(plan: StreamPlan, visit: (node: StreamPlan) => void, seen = new Set<StreamPlan>()): void {
  if (seen.has(plan)) return;
  seen.add(plan);
  visit(plan);
  for (const input of streamInputs(plan)) walkAll(input, visit, seen);
  if (plan.kind === 'StreamShared') walkAll(plan.source, visit, seen);
}

/** Equal values of the two types hash alike (parallel/vnode.ts: integers by value, else per type). */
function sameHash(a: DataType, b: DataType): boolean {
  const integer = (type: DataType) => type.name === 'int2' || type.name === 'int4' || type.name === 'int8';
  if (integer(a) && integer(b)) return true;
  return a.name === b.name && JSON.stringify(a) === JSON.stringify(b);
}

function columnIndex(expression: { readonly kind: string; readonly index?: number }): number {
  return expression.kind === 'Column' ? expression.index! : -1;
}

/**
 * The fragment rooted at `plan`, or undefined when `plan` runs where its parent does: a stateful
 * node that can run in a fragment, or a chain of linear nodes over one. `shared`: the plan's
 * shared subtrees (`sharedSources`), which never run inside a fragment.
 */
export function fragmentAt(plan: StreamPlan, shared: ReadonlySet<StreamPlan>): Fragment | undefined {
  const part: Part = { nodes: [], inputs: [], vnodes: new Map() };
  // Linear nodes above the first stateful one run in the workers too.
  let node = plan;
  while ((node.kind === 'StreamFilter' || node.kind === 'StreamProject' || node.kind === 'StreamLateral') && !shared.has(node.input)) {
    part.nodes.push(node);
    node = node.input;
  }
  if (node !== plan && shared.has(node)) return undefined;
  if (stateful(node, shared, part) === null) return undefined;
  // The same plan object reached twice as an input would need two slots for one node.
  if (new Set(part.inputs.map((input) => input.plan)).size !== part.inputs.length) return undefined;
  // Keyed by a time window alone, a fragment has a few keys per epoch: one worker would get all
  // the rows, which the main thread would encode for it, so it runs on the main thread.
  if (part.inputs.every((input) => input.key.every((column) => windowColumn(input.plan, column)))) return undefined;
  const fragment: Fragment = { root: plan, nodes: part.nodes, inputs: part.inputs, stateVnodes: part.vnodes };
  // The workers get the fragment as data: every constant in it must survive the copy.
  if (toTransfer(workerPlan(fragment, fragment.inputs.map(() => false))) === undefined) return undefined;
  return fragment;
}

/** Adds a stateful node and its subtree to `part`; its output's distribution, or null when it cannot run in a fragment. */
function stateful(plan: StreamPlan, shared: ReadonlySet<StreamPlan>, part: Part): Distribution | null {
  if ((plan.kind !== 'StreamHashAggregate' && plan.kind !== 'StreamHashJoin') || serialReason(plan) !== undefined) return null;
  const own: Part = { nodes: [plan], inputs: [], vnodes: new Map() };
  if (plan.kind === 'StreamHashAggregate') {
    const group = plan.groupKeys.map(columnIndex);
    const input = require(plan.inputs[0]!, group, true, shared, own);
    if (input === undefined) return null;
    // Each of the input's hashed columns is a group key column: name it by its group key position.
    const out = input.map((positions) => group.flatMap((column, index) => (positions.includes(column) ? [index] : [])));
    // Every state table of the aggregate starts with the group key's columns (aggregate.ts).
    if (out.every((positions) => positions.length > 0)) for (const table of plan.stateTables) own.vnodes.set(table.tableId, out.map((positions) => positions[0]!));
    commit(part, own);
    return out;
  }
  const leftKey = plan.keys[0]!.map(columnIndex);
  const rightKey = plan.keys[1]!.map(columnIndex);
  // Each side exchanged by its whole key, in key order, so equal keys meet in one worker.
  require(plan.inputs[0]!, leftKey, false, shared, own);
  require(plan.inputs[1]!, rightKey, false, shared, own);
  // A side's state rows start with its key's values, in key order (incrementalize.ts, hashJoin).
  for (const table of plan.stateTables) own.vnodes.set(table.tableId, leftKey.map((_, index) => index));
  commit(part, own);
  const width = plan.inputs[0]!.columns.length;
  switch (plan.joinType) {
    case 'inner':
      return leftKey.map((column, i) => [column, width + rightKey[i]!]);
    case 'left':
    case 'semi':
    case 'anti':
      return leftKey.map((column) => [column]);
    case 'right':
      return rightKey.map((column) => [width + column]);
    default:
      // A full join's unmatched rows carry NULL for the other side's key.
      return undefined;
  }
}

/** Adds a subtree's part to the fragment's. */
function commit(part: Part, own: Part): void {
  part.nodes.push(...own.nodes);
  part.inputs.push(...own.inputs);
  for (const [table, columns] of own.vnodes) part.vnodes.set(table, columns);
}

/**
 * Adds `plan` (an input of a fragment's node that needs its rows distributed by `key`, columns of
 * `plan`) to `part`: the linear nodes down to where the key's columns are still plain columns, then
 * a cut there, or (when `aggregate`) a stateful node whose own distribution already fits. Returns
 * the distribution of `plan`'s rows. An aggregate's input may be distributed by part of its group
 * key (each group still lives in one worker): a key column a LATERAL or a projection computes
 * (HOP's window start) is dropped from the exchange's key when others remain, so the exchange
 * goes below it and carries one row per event, not one per window. A join's sides keep their
 * whole key, in order, so equal keys of both sides meet.
 */
function require(plan: StreamPlan, key: readonly number[], aggregate: boolean, shared: ReadonlySet<StreamPlan>, part: Part): Distribution {
  const chain: StreamPlan[] = [];
  let node = plan;
  // The key's columns as `plan` numbers them, and as the current node does.
  let top = key;
  let columns = key;
  const narrow = (mapped: readonly number[]): boolean => {
    const kept = mapped.flatMap((column, index) => (column >= 0 ? [index] : []));
    if (kept.length === mapped.length) {
      columns = mapped;
      return true;
    }
    if (!aggregate || kept.length === 0) return false;
    top = kept.map((index) => top[index]!);
    columns = kept.map((index) => mapped[index]!);
    return true;
  };
  for (;;) {
    if (shared.has(node)) break;
    if (aggregate && (node.kind === 'StreamHashAggregate' || node.kind === 'StreamHashJoin')) {
      const below: Part = { nodes: [], inputs: [], vnodes: new Map() };
      const distribution = stateful(node, shared, below);
      // It fits when each of its hashed columns is one of the key's: equal keys, equal owners.
      if (distribution !== null && distribution !== undefined && distribution.length > 0 && distribution.every((positions) => positions.some((position) => columns.includes(position)))) {
        part.nodes.push(...chain);
        commit(part, below);
        return upward(distribution, chain);
      }
      break;
    }
    if (node.kind === 'StreamFilter') {
      chain.push(node);
      node = node.input;
      continue;
    }
    // A projection that narrows the rows runs before the exchange (it sends fewer values), unless
    // a LATERAL below it multiplies them.
    if (node.kind === 'StreamProject' && node.expressions.length < node.input.columns.length && !lateralBelow(node.input)) break;
    if (node.kind === 'StreamProject') {
      const expressions = node.expressions;
      if (!narrow(columns.map((column) => columnIndex(expressions[column]!)))) break;
      chain.push(node);
      node = node.input;
      continue;
    }
    if (node.kind === 'StreamLateral') {
      // Its rows are the input row's columns, then the function's.
      const width = node.input.columns.length;
      if (!narrow(columns.map((column) => (column < width ? column : -1)))) break;
      chain.push(node);
      node = node.input;
      continue;
    }
    break;
  }
  part.nodes.push(...chain);
  part.inputs.push({ plan: node, key: columns });
  return top.map((column) => [column]);
}

const WINDOW_FUNCTIONS = new Set(['tumble_start', 'window_end', 'hop_first_start', 'hop_last_start']);

/** True when `value` (a plan or an expression) calls a time window's function (TUMBLE, HOP). */
function callsWindowFunction(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(callsWindowFunction);
  const record = value as { kind?: unknown; fn?: { name?: unknown } };
  if (record.kind === 'Call' && typeof record.fn?.name === 'string' && WINDOW_FUNCTIONS.has(record.fn.name)) return true;
  return Object.entries(value).some(([key, field]) => key !== 'fn' && callsWindowFunction(field));
}

const TIME_BUCKET_FUNCTIONS = new Set(['date_trunc', 'to_char']);
const TIME_TYPES = new Set(['timestamp', 'timestamptz', 'date']);

/**
 * True when `expression` buckets a time (`to_char(date_time, 'YYYY-MM-DD')`, `date_trunc('hour',
 * ts)`): a group key computed so (keysAsColumns, aggregate.ts) has a few values per epoch, as a
 * window has. Nexmark q15, grouped by the day alone, stays on the main thread.
 */
function timeBucket(expression: Expression): boolean {
  return expression.kind === 'Call' && TIME_BUCKET_FUNCTIONS.has(expression.fn.name) && expression.args.some((arg) => TIME_TYPES.has(arg.type.name));
}

/** True when column `column` of `plan`'s rows is a time window's start or end (TUMBLE, HOP), or a time's bucket. */
function windowColumn(plan: StreamPlan, column: number): boolean {
  switch (plan.kind) {
    case 'StreamFilter':
      return windowColumn(plan.input, column);
    case 'StreamProject': {
      const expression = plan.expressions[column]!;
      return expression.kind === 'Column' ? windowColumn(plan.input, expression.index) : callsWindowFunction(expression) || timeBucket(expression);
    }
    case 'StreamLateral': {
      const width = plan.input.columns.length;
      return column < width ? windowColumn(plan.input, column) : callsWindowFunction(plan.template);
    }
    case 'StreamHashAggregate': {
      const key = plan.groupKeys[column];
      return key !== undefined && key.kind === 'Column' && windowColumn(plan.inputs[0]!, key.index);
    }
    case 'StreamHashJoin': {
      const width = plan.inputs[0]!.columns.length;
      if (plan.joinType === 'semi' || plan.joinType === 'anti' || column < width) return windowColumn(plan.inputs[0]!, column);
      return windowColumn(plan.inputs[1]!, column - width);
    }
    case 'StreamShared':
      return windowColumn(plan.source, plan.map === undefined ? column : plan.map[column]!);
    default:
      return false;
  }
}

/** True when a LATERAL is among the linear nodes at the top of `plan`. */
function lateralBelow(plan: StreamPlan): boolean {
  let node = plan;
  while (node.kind === 'StreamFilter' || node.kind === 'StreamProject') node = node.input;
  return node.kind === 'StreamLateral';
}

/** A distribution of the bottom of a chain of linear nodes (top first), seen at its top. */
function upward(distribution: readonly (readonly number[])[], chain: readonly StreamPlan[]): Distribution {
  let current: readonly (readonly number[])[] = distribution;
  for (let i = chain.length - 1; i >= 0; i--) {
    const node = chain[i]!;
    if (node.kind !== 'StreamProject') continue;
    current = current.map((positions) => node.expressions.flatMap((expression, index) => (positions.includes(columnIndex(expression)) ? [index] : [])));
  }
  return current.some((positions) => positions.length === 0) ? undefined : current;
}

/**
 * The fragment as its workers get it (`toTransfer` makes it data): each cut input replaced by a scan of placeholder
 * relation `streamInputRelationId(i)` with the input's columns (a source with a hidden row id when
 * the input only inserts, `insertsOnly[i]`, so the operators above see what they see on the main
 * thread), the EXPLAIN-only templates of joins and aggregates left out.
 */
export function workerPlan(fragment: Fragment, insertsOnly: readonly boolean[]): StreamPlan {
  const slots = new Map(fragment.inputs.map((input, slot) => [input.plan, slot]));
  const copy = (node: StreamPlan): StreamPlan => {
    const slot = slots.get(node);
    if (slot !== undefined) return placeholder(slot, fragment.inputs[slot]!.plan, insertsOnly[slot]!);
    switch (node.kind) {
      case 'StreamFilter':
      case 'StreamProject':
      case 'StreamLateral':
        return { ...node, input: copy(node.input) };
      case 'StreamHashAggregate':
        return { ...node, inputs: node.inputs.map(copy), template: undefined as unknown as HashAggregatePlan['template'] };
      case 'StreamHashJoin':
        return { ...node, inputs: node.inputs.map(copy), template: undefined as unknown as HashJoinPlan['template'] };
      default:
        throw new Error(`${node.kind} in a parallel fragment`);
    }
  };
  return copy(fragment.root);
}

function placeholder(slot: number, input: StreamPlan, insertsOnly: boolean): StreamPlan {
  const columns = input.columns.map((column) => ({ name: column.name, type: column.type, nullable: true, hidden: false }));
  const width = columns.length;
  const relation: RelationDef = {
    id: streamInputRelationId(slot),
    kind: insertsOnly ? 'source' : 'table',
    schema: '',
    name: `stream_input_${slot}`,
    columns: insertsOnly ? [...columns, { name: '_row_id', type: scalar('int8'), nullable: false, hidden: true }] : columns,
    primaryKey: insertsOnly ? [width] : [],
    dependsOn: [],
  };
  return { kind: 'StreamTableScan', property: 'linear', relation, projection: columns.map((_, index) => index), stateTables: [], columns: input.columns };
}

/**
 * True when a join of the fragment keeps input `slot`'s rows by source row id
 * (`HashJoinOperator.rowIds`): the exchange then carries each row's id (`ChangeBatch.ids`) too.
 */
export function inputNeedsRowIds(fragment: Fragment, slot: number): boolean {
  const input = fragment.inputs[slot]!;
  if (!carriesRowIds(input.plan, true)) return false;
  for (const node of fragment.nodes) {
    if (node.kind !== 'StreamHashJoin' || node.rowIds === undefined) continue;
    for (let side = 0; side < 2; side++) {
      if (!node.rowIds[side]) continue;
      let below = node.inputs[side]!;
      while (below !== input.plan && (below.kind === 'StreamFilter' || below.kind === 'StreamProject' || below.kind === 'StreamWatermarkFilter')) below = below.kind === 'StreamWatermarkFilter' ? below.inputs[0]! : below.input;
      if (below === input.plan) return true;
    }
  }
  return false;
}

/** An exchange's key in words: the input's column names. */
export function distributionText(input: FragmentInput): string {
  return input.key.map((column) => input.plan.columns[column]?.name ?? `#${column}`).join(', ');
}
