// Which materialized views run as source fragments at --parallelism N > 1 (executor/stream/PARALLEL.md,
// "Source fragments"), decided here so that EXPLAIN and the running dataflow agree: a view whose
// whole plan is a scan of a replayed generator source (its rows a function of each split's
// offsets), then filters and projections, then a materialize of blind inserts keyed by the source's
// row ids. Each of N workers then generates, filters, projects and stores its share of every range
// of units the source's splits advance by; nothing of the view runs on the main thread. Also which
// inputs of a keyed fragment (parallel.ts) its workers generate themselves ("Sources in keyed
// fragments"): the same kind of source through filters and projections, its rows then exchanged
// from worker to worker.

import type { RelationDef } from '../../sql/catalog.js';
import { fragmentAt, sharedSources } from './parallel.js';
import { toTransfer } from './plan-transfer.js';
import { streamInputs, type StreamPlan } from './stream-plan.js';

export type MaterializePlan = Extract<StreamPlan, { kind: 'StreamMaterialize' }>;
export type ScanPlan = Extract<StreamPlan, { kind: 'StreamTableScan' }>;

/** Connectors whose replayed rows are a function of (options, split, offset). */
const SPLIT_GENERATORS: ReadonlySet<string> = new Set(['nexmark', 'datagen']);

/** The source scan at the leaf of a source fragment's chain, or why the view is not one. */
function fragmentScan(plan: StreamPlan): ScanPlan | string {
  if (plan.kind !== 'StreamMaterialize') return 'not a materialize';
  return chainScan(plan.input);
}

/** The replayed generator source scan under a chain of filters and projections, or why `plan` is not one. */
function chainScan(plan: StreamPlan): ScanPlan | string {
  let node: StreamPlan = plan;
  while (node.kind === 'StreamFilter' || node.kind === 'StreamProject') node = node.input;
  if (node.kind !== 'StreamTableScan') return 'its plan is more than a source read through filters and projections';
  const relation = node.relation;
  if (relation.kind !== 'source') return `it reads ${relation.kind === 'table' ? 'a table' : 'a view'}, whose rows are on the main thread`;
  const connector = (relation.options?.['connector'] ?? '').toLowerCase();
  if (!SPLIT_GENERATORS.has(connector)) return `the ${connector === '' ? 'source' : `${connector} source`} is read on the main thread`;
  if (relation.replayed !== true) return 'the source stores its rows (it is not replayed from its splits)';
  if (!hiddenRowId(relation)) return 'the source has no hidden row id';
  return node;
}

function hiddenRowId(relation: RelationDef): boolean {
  if (relation.primaryKey.length !== 1) return false;
  const column = relation.columns[relation.primaryKey[0]!];
  return column !== undefined && column.hidden === true && column.type.name === 'int8';
}

/** Why a plan is not a source fragment, or undefined when it is. */
export function sourceSerialReason(plan: StreamPlan): string | undefined {
  const scan = fragmentScan(plan);
  if (typeof scan === 'string') return scan;
  if (toTransfer(plan) === undefined) return 'an expression the workers cannot receive (a function made by the planner, a composed cast)';
  return undefined;
}

/** The source a source fragment reads (its scan), or undefined when `plan` is not one. */
export function fragmentSource(plan: StreamPlan): RelationDef | undefined {
  if (sourceSerialReason(plan) !== undefined) return undefined;
  return (fragmentScan(plan) as ScanPlan).relation;
}

/**
 * Whether keyed fragments generate their sources in their workers: off unless the process's
 * environment has OXBOW_KEYED_SOURCE_WORKERS=1. On the 2-core machine Nexmark q4 at parallelism 2
 * ran 0.35-0.6x as fast with it as with the main thread generating and exchanging the rows, and
 * spent 20-30% more CPU per event (BENCHMARKS.md, "Parallel aggregates"; PARALLEL.md, "Sources in
 * keyed fragments"), so the main thread's exchange stays the default until it is faster.
 */
export function keyedSourcesInWorkers(): boolean {
  return process.env['OXBOW_KEYED_SOURCE_WORKERS'] === '1';
}

/**
 * The source scan of a keyed fragment's input (planner/stream/parallel.ts `FragmentInput.plan`)
 * that the fragment's workers generate themselves (PARALLEL.md, "Sources in keyed fragments"): a
 * replayed generator source read through filters and projections only. Each worker then
 * generates its share of every range of the source's units, runs the chain and sends each row to
 * the worker owning its key. Undefined: the input's rows come from the main thread's exchange.
 */
export function keyedSourceScan(input: StreamPlan): ScanPlan | undefined {
  const scan = chainScan(input);
  if (typeof scan === 'string') return undefined;
  if (toTransfer(input) === undefined) return undefined;
  return scan;
}

/** A plan's scans of relation `relationId` (a StreamShared leaf reads its subtree's output, not the relation). */
function scansOf(plan: StreamPlan, relationId: number): number {
  let count = plan.kind === 'StreamTableScan' && plan.relation.id === relationId ? 1 : 0;
  for (const input of streamInputs(plan)) count += scansOf(input, relationId);
  return count;
}

/**
 * The sources of view plan `root` that the workers of its keyed fragments generate at
 * --parallelism N > 1: every scan of the source in the view is an input of a fragment
 * (`keyedSourceScan`). A source also read anywhere else has its rows made on the main thread, and
 * they reach every fragment through the main thread's exchange. `shared`: the plan's shared
 * subtrees (parallel.ts `sharedSources`).
 */
export function workerGeneratedSources(root: StreamPlan, shared: ReadonlySet<StreamPlan> = sharedSources(root)): Set<number> {
  if (!keyedSourcesInWorkers()) return new Set();
  const inputs = new Map<number, number>();
  const visit = (plan: StreamPlan): void => {
    const fragment = fragmentAt(plan, shared);
    if (fragment === undefined) {
      for (const input of streamInputs(plan)) visit(input);
      return;
    }
    for (const input of fragment.inputs) {
      const scan = keyedSourceScan(input.plan);
      if (scan === undefined) visit(input.plan);
      else inputs.set(scan.relation.id, (inputs.get(scan.relation.id) ?? 0) + 1);
    }
  };
  visit(root);
  const out = new Set<number>();
  for (const [relationId, count] of inputs) if (count === scansOf(root, relationId)) out.add(relationId);
  return out;
}
