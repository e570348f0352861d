// Common-subplan sharing: the last step of planning a view's streaming plan (after the
// incrementalization pass). When two subtrees of one view's plan compute the same changes (the same
// operators over the same inputs with the same expressions; only their state table ids differ), the
// dataflow builds the first one (in pre-order) once and feeds its output to both parents: the second
// becomes a `StreamShared` leaf naming the first (`source`, the same object in the plan), with a
// column map for an aggregate whose group keys are the same set in another order (Nexmark q5 groups
// `window_start, auction` once and `auction, window_start` under its max; in its windowed form both
// clean their state by watermark on window_start, the same key in another position).
//
// Why a planner pass and not the dataflow's build: the plan is what EXPLAIN, EXPLAIN ANALYZE and
// oxbow_catalog.dataflow / state_size print, so the sharing shows where the operators are listed;
// and it runs on every planning of the stored definition (CREATE and each restart), a pure function
// of the plan, so a restart shares the same subtree over the same state.
//
// The second subtree's state tables are still allocated (the catalog stores every id the pass
// allocates, and a restart replays the allocation): the StreamShared node declares them, marked
// unused, so `state_size` lists them (empty for a view created with sharing; a view created before
// keeps the rows its second copy wrote, no longer read or written) and DROP drops them. The kept
// subtree's state equals what the second copy's would be: both saw the same changes from the start.
//
// Shared: subtrees holding a stateful operator or a LATERAL (HOP's windows); not chains of scans,
// filters, projections and UNION ALL (cheap to run twice, and their batches may carry the row ids a
// view's blind insert takes over).

import type { ScalarFunction } from '../../sql/functions.js';
import { streamInputs, type StateTableDeclaration, type StreamPlan } from './stream-plan.js';

type SharedNode = Extract<StreamPlan, { kind: 'StreamShared' }>;

/** Objects seen by identity (function implementations): the same object gets the same number. */
const identities = new WeakMap<object, number>();
let nextIdentity = 1;

function identity(value: object): number {
  let id = identities.get(value);
  if (id === undefined) identities.set(value, (id = nextIdentity++));
  return id;
}

/**
 * A canonical text of a plan fragment for sameness: state tables and output column names left out
 * (they differ between two copies and do not change the changes computed), relations by id,
 * expression source positions left out, bigints as text, scalar functions by oid, name and types,
 * other functions by identity.
 */
function canonical(value: unknown, key: string | undefined, done?: ReadonlyMap<StreamPlan, string>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'undefined':
      return 'u';
    case 'bigint':
      return `${value}n`;
    case 'number':
    case 'boolean':
      return String(value);
    case 'string':
      return JSON.stringify(value);
    case 'function':
      return `f${identity(value)}`;
    case 'symbol':
      return String(value);
    default:
      break;
  }
  if (Array.isArray(value)) {
    if (key === 'columns') return `[${value.map((column: { type?: unknown }) => canonical(column.type, 'type')).join(',')}]`;
    return `[${value.map((item) => canonical(item, undefined, done)).join(',')}]`;
  }
  if (value instanceof Map) return `M[${[...value].map(([k, v]) => `${canonical(k, undefined)}:${canonical(v, undefined)}`).join(',')}]`;
  if (value instanceof Set) return `S[${[...value].map((item) => canonical(item, undefined)).join(',')}]`;
  if (ArrayBuffer.isView(value)) return `B[${Array.from(value as unknown as ArrayLike<number>).join(',')}]`;
  if (key === 'relation') return `R${(value as { id: number }).id}`;
  // An input subtree's text, computed already (exactTexts goes bottom-up).
  const known = done?.get(value as StreamPlan);
  if (known !== undefined) return known;
  const record = value as Record<string, unknown>;
  if (typeof record['impl'] === 'function' && typeof record['oid'] === 'number' && typeof record['name'] === 'string') {
    // A ScalarFunction: the registry's have a unique oid; the binder's own (oid 0: the time window
    // functions, array subscript) are made anew per call and are determined by name and types.
    const fn = record as unknown as ScalarFunction;
    // A volatile call (random() over constant rows, run once at creation) is never the same as
    // another: two subtrees calling it compute different values.
    if (fn.volatility === 'volatile') return `volatile${nextIdentity++}`;
    return `fn(${JSON.stringify(fn.name)},${fn.oid},${canonical(fn.argumentTypes, undefined)},${canonical(fn.variadic, undefined)},${canonical(fn.returnType, undefined)})`;
  }
  const name = (value as object).constructor?.name ?? '';
  let text = `${name}{`;
  for (const field of Object.keys(record).sort()) {
    if (field === 'stateTables' || field === 'position') continue;
    const item = record[field];
    if (item === undefined) continue;
    text += `${field}:${canonical(item, field, done)};`;
  }
  return `${text}}`;
}

/** True when the subtree holds something worth computing once: a stateful operator or a LATERAL. */
function worthSharing(plan: StreamPlan): boolean {
  if (plan.property === 'stateful' || plan.kind === 'StreamLateral') return true;
  return streamInputs(plan).some(worthSharing);
}

/** A subtree's identity for sharing, and how its output columns map onto the canonical order. */
interface Signature {
  readonly text: string;
  /** Output column i is canonical column order[i] (undefined: the identity). */
  readonly order?: readonly number[];
}

function signatureOf(plan: StreamPlan, exact: Map<StreamPlan, string>): Signature {
  const text = exact.get(plan)!;
  if (plan.kind !== 'StreamHashAggregate') return { text };
  // The same group keys in another order: one canonical order (keys sorted by text), and where
  // each of this node's output columns sits in it. Output: keys, then the calls.
  const keys = plan.groupKeys.map((key) => canonical(key, undefined));
  if (new Set(keys).size !== keys.length) return { text };
  const sorted = [...keys].sort();
  const order = [...keys.map((key) => sorted.indexOf(key)), ...plan.calls.map((_, index) => keys.length + index)];
  // The template (EXPLAIN only) and the output columns follow the keys' order; the keys' and
  // calls' types are in their own texts. State cleaning by watermark names its key by position:
  // the canonical one (q5's windowed form cleans both counts by window_start, key 0 of one and 1
  // of the other; both read the same watermark table, incrementalize.ts keeps one per relation).
  const clean = plan.clean === undefined ? undefined : { ...plan.clean, key: sorted.indexOf(keys[plan.clean.key]!) };
  const rest = canonical({ ...plan, groupKeys: undefined, template: undefined, columns: undefined, clean }, undefined, exact);
  return { text: `agg(${sorted.join(',')})${rest}`, order: order.every((at, index) => at === index) ? undefined : order };
}

/** Canonical texts of every subtree (post-order, each subtree's text includes its inputs'). */
function exactTexts(plan: StreamPlan, out: Map<StreamPlan, string>): void {
  for (const input of streamInputs(plan)) exactTexts(input, out);
  out.set(plan, canonical(plan, undefined, out));
}

/** The plan with each repeated subtree after its first occurrence replaced by a StreamShared leaf. */
export function shareSubplans(plan: StreamPlan): StreamPlan {
  const exact = new Map<StreamPlan, string>();
  exactTexts(plan, exact);
  // Pre-order: a larger subtree is met (and shared whole) before the subtrees inside it.
  const first = new Map<string, { readonly plan: StreamPlan; readonly order: readonly number[] | undefined }>();
  const replaced = new Map<StreamPlan, { readonly source: StreamPlan; readonly map: readonly number[] | undefined }>();
  const visit = (node: StreamPlan): void => {
    if (worthSharing(node)) {
      const signature = signatureOf(node, exact);
      const seen = first.get(signature.text);
      if (seen !== undefined) {
        // This node's column i is canonical column order[i], which is the first's column inverse(order)[...].
        const inverse = seen.order === undefined ? undefined : invert(seen.order);
        const own = signature.order;
        const map = node.columns.map((_, index) => {
          const canonicalIndex = own === undefined ? index : own[index]!;
          return inverse === undefined ? canonicalIndex : inverse[canonicalIndex]!;
        });
        replaced.set(node, { source: seen.plan, map: map.every((at, index) => at === index) ? undefined : map });
        return;
      }
      first.set(signature.text, { plan: node, order: signature.order });
    }
    for (const input of streamInputs(node)) visit(input);
  };
  visit(plan);
  if (replaced.size === 0) return plan;
  const rebuilt = new Map<StreamPlan, StreamPlan>();
  const rebuild = (node: StreamPlan): StreamPlan => {
    const done = rebuilt.get(node);
    if (done !== undefined) return done;
    const share = replaced.get(node);
    let out: StreamPlan;
    if (share !== undefined) {
      const shared: SharedNode = {
        kind: 'StreamShared',
        property: 'linear',
        source: rebuild(share.source),
        ...(share.map === undefined ? {} : { map: share.map }),
        stateTables: unusedTables(node),
        columns: node.columns,
      };
      out = shared;
    } else {
      out = withInputs(node, streamInputs(node).map(rebuild));
    }
    rebuilt.set(node, out);
    return out;
  };
  return rebuild(plan);
}

function invert(order: readonly number[]): number[] {
  const out: number[] = new Array(order.length);
  order.forEach((at, index) => (out[at] = index));
  return out;
}

/** Every state table of the replaced subtree, declared unused (allocated ids stay with the view). */
function unusedTables(plan: StreamPlan): StateTableDeclaration[] {
  const out: StateTableDeclaration[] = [];
  const walk = (node: StreamPlan): void => {
    for (const table of node.stateTables) out.push({ ...table, purpose: `${table.purpose} (unused: the shared subtree's state serves both)` });
    for (const input of streamInputs(node)) walk(input);
  };
  walk(plan);
  return out;
}

/** The node with its inputs replaced (the same object when none changed). */
function withInputs(plan: StreamPlan, inputs: readonly StreamPlan[]): StreamPlan {
  const old = streamInputs(plan);
  if (inputs.every((input, index) => input === old[index])) return plan;
  switch (plan.kind) {
    case 'StreamFilter':
    case 'StreamProject':
    case 'StreamLateral':
    case 'StreamMaterialize':
      return { ...plan, input: inputs[0]! };
    case 'StreamTableScan':
    case 'StreamValues':
    case 'StreamShared':
      return plan;
    default:
      return { ...plan, inputs };
  }
}

/** The pre-order number (1 = the root, as the dataflow numbers operators) of `target` in `plan`, or undefined. */
export function operatorNumber(plan: StreamPlan, target: StreamPlan): number | undefined {
  let next = 0;
  const walk = (node: StreamPlan): number | undefined => {
    next++;
    if (node === target) return next;
    for (const input of streamInputs(node)) {
      const found = walk(input);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return walk(plan);
}
