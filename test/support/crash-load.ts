// The workload of the exactly-once sink suites: statements into `items (id int PRIMARY KEY, v
// int)` on an oxbow server that the test kills with SIGKILL at random moments and starts again on
// the same data directory. Every statement writes a value never written before, so each row
// version is unique and a sink's output can be checked version by version. The workload keeps its
// own model: every committed version (`versions`, each as `key(id, v)`) and each id's current
// value (`model`). A statement cut off by a kill is looked up after the restart, so the model
// holds exactly what committed.

import type pg from 'pg';
import { connectToKillable, startOxbow, type OxbowServer, type StartOxbowOptions } from './server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface CrashLoadOptions {
  /** How the server starts, each time (its data directory kept across kills). */
  readonly oxbow: StartOxbowOptions;
  /** The seeded numbers that pick ids, updates and pauses. */
  readonly random: () => number;
  /** A committed version as the sink under test writes it (a message, a line of a table). */
  readonly key: (id: number, v: number) => string;
}

export class CrashLoad {
  /** Every committed version, as `key(id, v)`. */
  readonly versions = new Set<string>();
  /** Each id's value after the last committed statement. */
  readonly model = new Map<number, number>();
  private nextId = 1;
  private nextValue = 1;
  private uncertain: { id: number; v: number } | undefined;

  private constructor(
    private readonly options: CrashLoadOptions,
    public server: OxbowServer,
    public client: pg.Client,
  ) {}

  /** Starts the server and connects a client. */
  static async start(options: CrashLoadOptions): Promise<CrashLoad> {
    const server = await startOxbow(options.oxbow);
    return new CrashLoad(options, server, await connectToKillable(server));
  }

  /** Records a version the test committed itself (the first row, before any sink delivered). */
  committed(id: number, v: number): void {
    this.versions.add(this.options.key(id, v));
    this.model.set(id, v);
  }

  /** Runs statements while `during` lasts (a number of milliseconds, or a promise's time). */
  async loadWhile(during: number | (() => Promise<unknown>)): Promise<void> {
    const stop = { done: false };
    const loading = this.load(stop);
    await (typeof during === 'number' ? sleep(during) : during());
    stop.done = true;
    await loading;
  }

  /** Runs statements, kills the server with SIGKILL after `ms`, starts it again and settles the statement the kill cut off. */
  async killAndRestart(ms: number): Promise<void> {
    await this.loadWhile(() => sleep(ms).then(() => this.server.kill('SIGKILL')));
    await this.client.end().catch(() => undefined);
    this.server = await startOxbow(this.options.oxbow);
    this.client = await connectToKillable(this.server);
    await this.settleUncertain();
  }

  async stop(): Promise<void> {
    await this.client.end();
    await this.server.stop();
  }

  /** One statement after another until `stop` says so or the server dies. */
  private async load(stop: { done: boolean }): Promise<void> {
    const { random } = this.options;
    while (!stop.done) {
      const ids = [...this.model.keys()];
      const update = ids.length > 0 && random() < 0.5;
      const id = update ? ids[Math.floor(random() * ids.length)]! : this.nextId++;
      const v = this.nextValue++;
      this.uncertain = { id, v };
      try {
        await this.client.query(update ? `UPDATE items SET v = ${v} WHERE id = ${id}` : `INSERT INTO items VALUES (${id}, ${v})`);
      } catch {
        return; // killed mid-statement: looked up after the restart
      }
      this.uncertain = undefined;
      this.committed(id, v);
      if (random() < 0.3) await sleep(Math.floor(random() * 20));
    }
  }

  /** After a restart: did the statement cut off by the kill commit? */
  private async settleUncertain(): Promise<void> {
    const cut = this.uncertain;
    this.uncertain = undefined;
    if (cut === undefined) return;
    const found = await this.client.query('SELECT v FROM items WHERE id = $1', [cut.id]);
    if (found.rows[0]?.v === cut.v) this.committed(cut.id, cut.v);
  }
}
