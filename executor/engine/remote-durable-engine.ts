// `--durability remote`: the Engine facade with one more promise: a statement that changed data
// returns only once a complete checkpoint in the object store holds its epoch. It wraps the real
// engine's sessions; after a statement commits (the store's committed epoch moved and the result is
// DML, DDL or COPY FROM), it waits on the checkpoint loop, which takes a checkpoint at once and
// shares it among every statement waiting. Reads never wait. If the checkpoint fails, the
// statement fails with 58030 saying the change is committed locally but not yet remote.

import type { CheckpointLoop } from '../../storage/checkpoint/checkpoint-loop.js';
import type { StateStore } from '../../storage/state-table.js';
import type { Engine, ExecuteOptions, ExecuteResult, LoginRole, PreparedStatement, Session, SessionEvents, StartupParameters } from './engine.js';

/** A result that reports a change (reads, SHOW and SET do not). */
function changesData(result: ExecuteResult): boolean {
  if (result.kind === 'command') return !/^(SELECT|SHOW|SET|RESET|BEGIN|START|COMMIT|ROLLBACK|END|ABORT|DISCARD|EXPLAIN|FETCH|PREPARE|DEALLOCATE)\b/.test(result.commandTag);
  if (result.kind === 'rows') return /^(INSERT|UPDATE|DELETE|MERGE)\b/.test(result.commandTag(0));
  return false;
}

class RemoteDurableSession implements Session {
  constructor(
    private readonly inner: Session,
    private readonly store: StateStore,
    private readonly loop: CheckpointLoop,
  ) {}

  get processId(): number {
    return this.inner.processId;
  }

  get secretKey(): number {
    return this.inner.secretKey;
  }

  reportedParameters(): ReadonlyMap<string, string> {
    return this.inner.reportedParameters();
  }

  prepareMany(sql: string): PreparedStatement[] {
    return this.inner.prepareMany(sql);
  }

  prepare(sql: string, parameterTypes: readonly (PreparedStatement['parameterTypes'][number] | undefined)[]): PreparedStatement {
    return this.inner.prepare(sql, parameterTypes);
  }

  async execute(statement: PreparedStatement, options: ExecuteOptions): Promise<ExecuteResult> {
    const before = this.store.committedEpoch;
    const result = await this.inner.execute(statement, options);
    if (result.kind === 'copyIn') {
      return {
        kind: 'copyIn',
        format: result.format,
        columnCount: result.columnCount,
        write: (chunk) => result.write(chunk),
        abort: (reason) => result.abort(reason),
        end: async () => {
          const start = this.store.committedEpoch;
          const tag = await result.end();
          const after = this.store.committedEpoch;
          if (after !== start) await this.loop.waitForEpoch(after);
          return tag;
        },
      };
    }
    const after = this.store.committedEpoch;
    if (after !== before && changesData(result)) await this.loop.waitForEpoch(after);
    return result;
  }

  cancel(): void {
    this.inner.cancel();
  }

  transactionStatus(): ReturnType<Session['transactionStatus']> {
    return this.inner.transactionStatus();
  }

  statementFailed(error: Parameters<Session['statementFailed']>[0]): void {
    this.inner.statementFailed(error);
  }

  setting(name: string): string | undefined {
    return this.inner.setting(name);
  }

  beginMessage(statementCount: number): void {
    this.inner.beginMessage?.(statementCount);
  }

  async endMessage(failed: boolean): Promise<void> {
    const before = this.store.committedEpoch;
    await this.inner.endMessage?.(failed);
    // A rollback's compensating epoch is durable remotely before the client hears ReadyForQuery.
    const after = this.store.committedEpoch;
    if (after !== before) await this.loop.waitForEpoch(after);
  }

  close(): void {
    this.inner.close();
  }
}

/**
 * The engine with checkpoints running beside it: close() stops the writers, then the checkpoint
 * loop, then the store; with durability 'remote', sessions wait for the object store after each change.
 */
export class CheckpointedEngine implements Engine {
  private readonly sessions = new WeakMap<Session, RemoteDurableSession>();

  constructor(
    private readonly inner: Engine & { stopWriters?(): Promise<void> },
    private readonly store: StateStore,
    private readonly loop: CheckpointLoop,
    private readonly durability: 'local' | 'remote',
    private readonly onClose: () => Promise<void>,
    /** close() checkpoints the last committed epoch once the writers stopped (a cluster's clean handover), within this bound. */
    private readonly finalCheckpointWithinMs?: number,
  ) {}

  loginRole(user: string): LoginRole | undefined {
    return this.inner.loginRole?.(user);
  }

  openSession(parameters: StartupParameters, events: SessionEvents): Session {
    const inner = this.inner.openSession(parameters, events);
    if (this.durability === 'local') return inner;
    const session = new RemoteDurableSession(inner, this.store, this.loop);
    this.sessions.set(inner, session);
    return session;
  }

  findSession(processId: number, secretKey: number): Session | undefined {
    const inner = this.inner.findSession(processId, secretKey);
    return inner === undefined ? undefined : (this.sessions.get(inner) ?? inner);
  }

  /**
   * Stops the writers first (sessions, sources, sinks: OxbowEngine.stopWriters), then the
   * checkpoint loop (a running checkpoint finishes on a free event loop), then the store.
   */
  async close(): Promise<void> {
    await this.inner.stopWriters?.();
    if (this.finalCheckpointWithinMs !== undefined) {
      this.checkpointStep = 'the last checkpoint before giving up leadership';
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolveBound) => (timer = setTimeout(resolveBound, this.finalCheckpointWithinMs)));
      // A failure leaves the epochs since the last checkpoint on this node's disk only, as a crash would.
      await Promise.race([this.loop.waitForEpoch(this.store.committedEpoch).catch(() => undefined), bound]);
      clearTimeout(timer);
    }
    this.checkpointStep = 'stopping checkpoints';
    await this.onClose();
    this.checkpointStep = undefined;
    await this.inner.close();
  }

  private checkpointStep: string | undefined;

  get closingStep(): string | undefined {
    return this.checkpointStep ?? this.inner.closingStep;
  }
}
