// One Kafka test file's setup, once: a real broker (broker.ts) and a real oxbow server process on a
// fresh data directory with a connected `pg` client, started before the file's tests and stopped
// after them (useKafkaHarness), plus what every file needs besides: waiting for a source's
// committed offsets, reading rows as text, catching an error's SQLSTATE and message.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import pg from 'pg';
import { startBroker, type Broker } from './broker.js';
import { waitFor } from '../support/wait-for.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { committedOffsets } from '../support/source-offsets.js';

/** Every server of the Kafka tests commits an epoch every 100 ms (tests wait on commits). */
const SERVER_ARGS = ['--barrier-interval-ms', '100'];

export interface KafkaHarnessOptions {
  /** Flags for the server besides --barrier-interval-ms 100. */
  readonly args?: readonly string[];
  /** false: only the broker (the file starts its own servers on `dataDir`). */
  readonly server?: boolean;
}

export interface KafkaHarness {
  readonly broker: Broker;
  /** The file's server (a new process after restart()). */
  readonly oxbow: OxbowServer;
  /** Connected to `oxbow`. */
  readonly client: pg.Client;
  /** A fresh data directory for the file's server, removed after the file. */
  readonly dataDir: string;
  /** Stops the server and starts it again on the same data directory, with a new client. */
  restart(): Promise<void>;
  /** Waits until the source has committed `expected` messages in total (offsets start at 0). */
  committed(source: string, expected: number, on?: pg.Client): Promise<void>;
  /** Rows as arrays of text (values through String(); NULL as 'NULL'), in the order returned. */
  rows(sql: string, on?: pg.Client): Promise<string[][]>;
  /** The SQLSTATE and message of the error `sql` must raise (and its hint when `withHint` and it has one). */
  sqlError(sql: string, on?: pg.Client, withHint?: boolean): Promise<{ code: string; message: string; hint?: string }>;
}

/** Registers the file's beforeAll / afterAll; the fields are set once beforeAll has run. */
export function useKafkaHarness(options: KafkaHarnessOptions = {}): KafkaHarness {
  let broker: Broker | undefined;
  let oxbow: OxbowServer | undefined;
  let client: pg.Client | undefined;
  let dataDir: string | undefined;
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the Kafka harness has no ${what} (before beforeAll, or started with server: false)`);
    return value;
  };
  const connect = async (): Promise<void> => {
    oxbow = await startOxbow({ dataDir: dataDir!, args: [...SERVER_ARGS, ...(options.args ?? [])] });
    client = new pg.Client({ connectionString: oxbow.url });
    await client.connect();
  };
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oxbow-kafka-test-'));
    broker = await startBroker();
    if (options.server !== false) await connect();
  }, 180_000);
  afterAll(async () => {
    await client?.end().catch(() => undefined);
    await oxbow?.stop();
    await broker?.stop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });
  const harness: KafkaHarness = {
    get broker() {
      return ready(broker, 'broker');
    },
    get oxbow() {
      return ready(oxbow, 'server');
    },
    get client() {
      return ready(client, 'client');
    },
    get dataDir() {
      return ready(dataDir, 'data directory');
    },
    async restart() {
      await client?.end().catch(() => undefined);
      await oxbow?.stop();
      await connect();
    },
    committed: (source, expected, on) => committed(on ?? harness.client, source, expected),
    rows: (sql, on) => rowsOf(on ?? harness.client, sql),
    sqlError: (sql, on, withHint) => sqlError(on ?? harness.client, sql, withHint),
  };
  return harness;
}

/** Waits until the source has committed `expected` messages in total (offsets start at 0). */
export async function committed(client: pg.Client, source: string, expected: number): Promise<void> {
  await waitFor(`${source} to commit ${expected} messages`, async () => ((await committedOffsets(client, source)) === expected ? true : undefined));
}

/** Rows as arrays of text (values through String(); NULL as 'NULL'), in the order returned. */
export async function rowsOf(client: pg.Client, sql: string): Promise<string[][]> {
  const result = await client.query({ text: sql, rowMode: 'array' });
  return (result.rows as unknown[][]).map((row) => row.map((value) => (value === null ? 'NULL' : String(value))));
}

/** The SQLSTATE and message of the error `sql` must raise (and its hint when `withHint` and it has one). */
export async function sqlError(client: pg.Client, sql: string, withHint = false): Promise<{ code: string; message: string; hint?: string }> {
  try {
    await client.query(sql);
  } catch (error) {
    const e = error as { code: string; message: string; hint?: string };
    return { code: e.code, message: e.message, ...(withHint && e.hint !== undefined ? { hint: e.hint } : {}) };
  }
  throw new Error(`expected an error from: ${sql}`);
}
