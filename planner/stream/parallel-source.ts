// Which materialized views run as source fragments at --parallelism N > 1 (executor/stream/PARALLEL.md,
// "Source fragments"), decided here so that EXPLAIN and the running dataflow agree: a view whose
// whole plan is a scan of a replayed generator source (its rows a function of each split's
// offsets), then filters and projections, then a materialize of blind inserts keyed by the source's
// row ids. Each of N workers then generates, filters, projects and stores its share of every range
// of units the source's splits advance by; nothing of the view runs on the main thread.

import type { RelationDef } from '../../sql/catalog.js';
import { toTransfer } from './plan-transfer.js';
import type { StreamPlan } from './stream-plan.js';

export type MaterializePlan = Extract<StreamPlan, { kind: 'StreamMaterialize' }>;
export type ScanPlan = Extract<StreamPlan, { kind: 'StreamTableScan' }>;

/** Connectors whose replayed rows are a function of (options, split, offset). */
const SPLIT_GENERATORS: ReadonlySet<string> = new Set(['nexmark', 'datagen']);

/** The source scan at the leaf of a source fragment's chain, or why the view is not one. */
function fragmentScan(plan: StreamPlan): ScanPlan | string {
  if (plan.kind !== 'StreamMaterialize') return 'not a materialize';
  let node: StreamPlan = plan.input;
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
