// The Engine over an already open StateStore: initialises the parser, loads the catalog from the
// store's metadata, and hands out sessions. create-engine.ts opens the RocksDB store for the
// server; tests open an engine over the in-memory store the same way.

import type { Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { initParser } from '../../sql/parser/index.js';
import type { StateStore } from '../../storage/state-table.js';
import { Catalog } from '../catalog/catalog.js';
import type { Engine, LoginRole, Session, SessionEvents, StartupParameters } from './engine.js';
import { EngineCore, type EngineSettings } from './engine-core.js';
import { EngineSession } from './session.js';
import { systemRegistry } from './system-tables.js';
import { restoreDataflows } from '../ddl/create-materialized-view.js';
import { SourceManager } from '../connectors/source-manager.js';
import { SinkManager } from '../connectors/sink-manager.js';
import { TemporalTicker } from '../stream/temporal-ticker.js';

/** The one database oxbow serves. */
export const DATABASE_NAME = 'oxbow';

export class OxbowEngine implements Engine {
  private readonly sessions = new Map<number, EngineSession>();
  private closed = false;
  private stopping: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  closingStep: string | undefined;
  /** Called when the last open session closes (a standby closes a replaced read-only engine then). */
  onIdle: (() => void) | undefined;

  constructor(
    private readonly core: EngineCore,
    /** The connectors of sources and connector tables (executor/connectors/). */
    private readonly sources?: SourceManager,
    /** Kafka sinks (executor/connectors/). */
    private readonly sinks?: SinkManager,
    /** The barrier loop of views with temporal filters (tests force a barrier with `tick()`). */
    readonly temporalTicker?: TemporalTicker,
  ) {}

  loginRole(user: string): LoginRole | undefined {
    const role = this.core.catalog.snapshot.role(user);
    if (role === undefined) return undefined;
    return role.password === undefined ? {} : { password: role.password };
  }

  openSession(parameters: StartupParameters, events: SessionEvents): Session {
    if (this.closed) throw new SqlError(SqlState.adminShutdown, 'the server is shutting down');
    // PostgreSQL's InitPostgres order: the role, then the database.
    const role = this.core.catalog.snapshot.role(parameters.user);
    if (role === undefined) throw new SqlError(SqlState.invalidAuthorizationSpecification, `role "${parameters.user}" does not exist`);
    if (!role.login) throw new SqlError(SqlState.invalidAuthorizationSpecification, `role "${parameters.user}" is not permitted to log in`);
    if (parameters.database !== DATABASE_NAME) {
      throw new SqlError(SqlState.invalidCatalogName, `database "${parameters.database}" does not exist`);
    }
    const session = new EngineSession(this.core, parameters, events, (closing) => {
      this.sessions.delete(closing.processId);
      if (this.sessions.size === 0) this.onIdle?.();
    });
    this.sessions.set(session.processId, session);
    return session;
  }

  /** Sessions open now. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  findSession(processId: number, secretKey: number): Session | undefined {
    const session = this.sessions.get(processId);
    return session !== undefined && session.secretKey === secretKey ? session : undefined;
  }

  /**
   * Runs `section` while no statement can commit (it holds the write lock): checkpoints cut a
   * consistent RocksDB checkpoint inside it. Readers keep running.
   */
  exclusive<T>(section: () => Promise<T>): Promise<T> {
    return this.core.writeLock.run(section);
  }

  /**
   * The first half of close(): refuses new sessions, closes the open ones, stops the sources, sinks
   * and temporal ticker (each waits for its running barrier) and waits until the last writer's
   * epoch is durable. Nothing writes afterwards, so the event loop is free. The engine with
   * checkpoints (remote-durable-engine.ts) calls it before it waits for a running checkpoint: sources left
   * running keep filling epochs that hold the event loop for seconds each (more when they lag), and
   * each step of the checkpoint's upload then waits behind one of them (a lagging 10-minute soak
   * did not close in 17 minutes). Idempotent.
   */
  stopWriters(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    this.closed = true;
    this.closingStep = 'closing sessions';
    // Each open block is rolled back as its session closes (session.ts, close()).
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
    this.closingStep = 'stopping sources (Kafka consumers disconnecting)';
    await this.sources?.stop();
    this.closingStep = 'stopping sinks (deliveries in flight, Kafka producers disconnecting)';
    await this.sinks?.stop();
    this.closingStep = 'stopping the temporal ticker';
    await this.temporalTicker?.stop();
    this.closingStep = 'waiting for the running epoch to commit';
    // Let a running writer finish its epoch (and the epochs in flight become durable).
    await this.core.writeLock.run(() => undefined);
    this.closingStep = undefined;
  }

  /** `--durability remote`: sources confirm upstream only what a complete remote checkpoint holds. */
  gateOnRemoteCheckpoints(epoch: () => Epoch): void {
    this.core.remoteCheckpointEpoch = epoch;
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.stopWriters();
      this.core.memory.stop();
      await this.core.batchWorkers?.close();
      this.closingStep = 'closing the state store';
      await this.core.store.close();
      this.closingStep = undefined;
    })();
    return this.closing;
  }
}

export async function openEngine(store: StateStore, settings: EngineSettings): Promise<OxbowEngine> {
  await initParser();
  const catalog = Catalog.load(store, systemRegistry.defs());
  const core = new EngineCore(store, catalog, settings);
  // A read-only engine (read-only.ts) reads the views' stored rows: nothing runs a dataflow or writes.
  if (settings.readOnly !== undefined) return new OxbowEngine(core);
  restoreDataflows(core, (searchPath) => ({ catalog: core.catalog, searchPath, parameterTypes: [] }));
  const sources = new SourceManager(core, core.sourceStatus, settings.barrierIntervalMs ?? 1000);
  sources.start();
  const sinks = new SinkManager(core, settings.barrierIntervalMs ?? 1000);
  sinks.start();
  const temporalTicker = new TemporalTicker(core, settings.barrierIntervalMs ?? 1000);
  temporalTicker.start();
  if (settings.manageMemory === true) core.memory.start();
  return new OxbowEngine(core, sources, sinks, temporalTicker);
}
