// Running a planned statement (a query or DML): the ordinary path (its plan brought up to date,
// EXPLAIN ANALYZE SELECT through explain-statements.ts), a one-row INSERT ... VALUES from its cached
// shape with its literals as parameters (any failure before the commit sends it the ordinary way),
// and a writing plan inside the write lock with its CHECK and FOREIGN KEY verification, committed
// and durable before it returns, its rows joining the open block's undo log.

import { columnDefaultSql } from '../../sql/catalog.js';
import type { Value } from '../../sql/value.js';
import type { PlannedStatement } from '../../planner/index.js';
import { executePlanned } from '../batch/index.js';
import { nextvalTarget } from '../catalog/sequence-defaults.js';
import { checkRunnerOf, verifyChecks, type CheckQueryHost } from './check-constraints.js';
import type { ExecuteOptions, ExecuteResult } from './engine.js';
import { explainAnalyzeQuery, type ExplainHost } from './explain-statements.js';
import { literalParameters } from './insert-shape-cache.js';
import type { StatementPreparer } from './statement-preparer.js';
import { rowsResult, type OxbowPrepared } from './statement-kinds.js';
import type { TransactionBlocks } from './transaction-blocks.js';

/** Returned by a cached-shape INSERT whose execution failed before its commit: run it the ordinary way. */
const ORDINARY_PATH = Symbol('ordinary path');

/** What the session hands its planned statements (also what EXPLAIN and CHECK queries run with). */
export interface PlannedStatementHost extends ExplainHost, CheckQueryHost {
  readonly preparer: StatementPreparer;
  readonly blocks: TransactionBlocks;
}

export class PlannedStatements {
  constructor(private readonly host: PlannedStatementHost) {}

  async execute(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    if (statement.shape !== undefined) return this.executeShape(statement, options, signal);
    const planned = this.host.preparer.currentPlan(statement);
    if (planned.analyze !== undefined) return explainAnalyzeQuery(planned, options.parameters, this.host, signal);
    return (await this.runPlanned(planned, options.parameters, signal, false)) as ExecuteResult;
  }

  /**
   * An INSERT ... VALUES from its cached shape: the cached plan run with the statement's literals.
   * Whatever fails before the commit (a literal its column refuses, a plan error, a constraint)
   * sends the statement through the ordinary path, whose answer (error text, SQLSTATE, position)
   * is the one a client gets; nothing was written (the epoch was aborted).
   */
  private async executeShape(statement: OxbowPrepared, options: ExecuteOptions, signal: AbortSignal): Promise<ExecuteResult> {
    const shape = statement.shape!;
    let planned: PlannedStatement;
    let parameters: Value[] | undefined;
    try {
      planned = this.host.preparer.shapePlan(shape.cached);
      // A table with a serial or identity column takes the ordinary path: a retry after a failure
      // would call nextval twice for the row (catalog/sequence-defaults.ts finds those defaults).
      const sequenced = planned.kind === 'insert' && (planned.targetRelation?.columns ?? []).some((column) => nextvalTarget(columnDefaultSql(column)) !== undefined);
      parameters = planned.kind === 'insert' && planned.columns === null && !sequenced ? literalParameters(shape.literals, planned.parameterTypes, this.host.evalContext()) : undefined;
    } catch {
      parameters = undefined;
    }
    if (parameters !== undefined) {
      const result = await this.runPlanned(planned!, parameters, signal, true);
      if (result !== ORDINARY_PATH) return result;
    }
    this.host.preparer.insertShapes.counts.ordinary++;
    this.host.blocks.openBlock()?.discardPending();
    return this.execute(this.host.preparer.ordinaryPrepared(statement), options, signal);
  }

  /**
   * Runs a plan; a writing one inside the write lock, committed and durable before it returns.
   * With `orOrdinaryPath`, a failure before the commit (other than a cancel or timeout) returns
   * ORDINARY_PATH instead of throwing.
   */
  /** Runs a planned statement with no parameters as the ordinary path does (TRUNCATE's DELETEs). */
  async run(planned: PlannedStatement, signal: AbortSignal): Promise<ExecuteResult> {
    return (await this.runPlanned(planned, [], signal, false)) as ExecuteResult;
  }

  private async runPlanned(planned: PlannedStatement, parameters: readonly Value[], signal: AbortSignal, orOrdinaryPath: boolean): Promise<ExecuteResult | typeof ORDINARY_PATH> {
    const writes = planned.kind === 'insert' || planned.kind === 'update' || planned.kind === 'delete';
    const run = async () => {
      const tables = this.host.tableAccess();
      const result = await executePlanned(planned, {
        tables,
        parameters,
        evalContext: this.host.evalContext(),
        signal,
      });
      await verifyChecks(tables, checkRunnerOf(this.host, signal));
      return result;
    };
    let result;
    if (writes) {
      const outcome = await this.host.core.writeLock.run(async () => {
        let ran;
        try {
          ran = await run();
          signal.throwIfAborted();
        } catch (error) {
          this.host.core.store.abort();
          if (orOrdinaryPath && !signal.aborted) return ORDINARY_PATH;
          throw error;
        }
        try {
          await this.host.core.commitDurable();
        } catch (error) {
          this.host.core.store.abort();
          throw error;
        }
        return ran;
      });
      if (outcome === ORDINARY_PATH) return ORDINARY_PATH;
      result = outcome;
      this.host.blocks.dataWritten();
    } else {
      result = await run();
    }
    if (planned.columns === null) return { kind: 'command', commandTag: result.commandTag };
    return rowsResult(planned.columns, result.rows, () => result.commandTag);
  }
}
