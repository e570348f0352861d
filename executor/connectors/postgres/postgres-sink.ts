// A sink's writer into a PostgreSQL table, exactly once: each delivery is one PostgreSQL
// transaction holding the rows and the sink's row in `oxbow_sink_progress` (the epoch delivered),
// so a delivery is in the target entirely or not at all, and a sink that starts (or lost its
// connection mid-delivery, not knowing whether COMMIT landed) reads that row and resumes after it.
//
// upsert: the last change of each key in the delivery (the sink reads just that: upsertKey,
// sink-changes.ts lastChangesBetween; a key deleted and re-inserted is one upsert), then one
// `DELETE ... USING unnest(...)` of the deleted keys and one `INSERT ... SELECT FROM unnest(...)
// ON CONFLICT (key) DO UPDATE` of the rest, ROWS_PER_STATEMENT rows per statement. append-only:
// the inserted rows in epoch order, plain INSERTs; deletes are not written (as Kafka's FORMAT
// PLAIN). Values travel as one text array per column (their PostgreSQL text, cast to the target
// column's type in the statement), each written here as one array literal: a statement's
// parameters are a handful of strings, not one per value. The next statement's arrays are built
// while PostgreSQL runs the one before.
//
// Durability: the sink's commits are synchronous (synchronous_commit at least `local` on its own
// connection, whatever the server's default): an acknowledged delivery survives a crash of
// PostgreSQL, so the progress row never goes back below what oxbow recorded as delivered.

import type pg from 'pg';
import type { Epoch } from '../../../sql/epoch.js';
import { formatValue } from '../../../sql/functions.js';
import type { DataType } from '../../../sql/types.js';
import type { Row } from '../../../sql/value.js';
import type { EpochChanges } from '../sink-changes.js';
import type { SinkTarget } from '../sink-target.js';
import type { PostgresSinkOptions } from './postgres-options.js';
import { connectPostgres, describeAddress, describeTarget, ensureProgressTable, PROGRESS_TABLE, qualifiedTable, quoteIdent, type SinkColumn } from './postgres-target.js';

/** How long stop() waits for the connection to close. */
const END_TIMEOUT_MS = 2000;
/** Rows per INSERT or DELETE statement. */
const ROWS_PER_STATEMENT = 20_000;

export class PostgresSinkTarget implements SinkTarget {
  readonly connector = 'postgres';
  private client: pg.Client | undefined;
  private statements: { insert: string; delete: string | undefined } | undefined;
  private readonly keyInRow: readonly number[];
  readonly upsertKey: readonly number[] | undefined;

  constructor(
    private readonly options: PostgresSinkOptions,
    /** The sink's name in the progress table. */
    private readonly sinkName: string,
    /** The columns written, and where each is in the relation's rows. */
    private readonly columns: readonly SinkColumn[],
    private readonly positions: readonly number[],
    /** The key's positions in the relation's rows (upsert). */
    keyPositions: readonly number[],
  ) {
    this.keyInRow = keyPositions;
    this.upsertKey = options.type === 'upsert' ? keyPositions : undefined;
  }

  private async connection(): Promise<pg.Client> {
    if (this.client !== undefined) return this.client;
    const client = await connectPostgres(this.options);
    try {
      const target = await describeTarget(client, this.options);
      if (target === undefined) throw new Error(`target table "${this.options.schema}.${this.options.table}" does not exist in PostgreSQL at ${describeAddress(this.options)}`);
      await ensureProgressTable(client, this.options);
      // A COMMIT must be durable once PostgreSQL acknowledges it: the sink's floor moves up to a
      // delivery right after its COMMIT (target-sink.ts), and a target whose progress fell below
      // the floor in a crash would get the relation's contents again. With synchronous_commit off
      // a crash loses the commits of the last few hundred ms, so this connection's commits flush
      // their WAL locally; any stronger setting of the server (on, remote_write, remote_apply) stays.
      await client.query("SELECT set_config('synchronous_commit', 'local', false) WHERE current_setting('synchronous_commit') = 'off'");
      this.statements = this.buildStatements(this.columns.map((column) => target.columns.get(column.name)?.formatted ?? 'text'));
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return client;
  }

  private buildStatements(casts: readonly string[]): { insert: string; delete: string | undefined } {
    const table = qualifiedTable(this.options);
    const names = this.columns.map((column) => quoteIdent(column.name));
    const arrays = casts.map((_, index) => `$${index + 1}::text[]`).join(', ');
    const aliases = casts.map((_, index) => `c${index}`).join(', ');
    const selected = casts.map((cast, index) => `u.c${index}::${cast}`).join(', ');
    let insert = `INSERT INTO ${table} (${names.join(', ')}) SELECT ${selected} FROM unnest(${arrays}) AS u(${aliases})`;
    if (this.options.type === 'append-only') return { insert, delete: undefined };
    const keyIndexes = this.keyInRow.map((position) => this.positions.indexOf(position));
    const keyNames = keyIndexes.map((index) => names[index]!);
    const others = names.filter((_, index) => !keyIndexes.includes(index));
    insert += ` ON CONFLICT (${keyNames.join(', ')}) DO ${others.length === 0 ? 'NOTHING' : `UPDATE SET ${others.map((name) => `${name} = EXCLUDED.${name}`).join(', ')}`}`;
    const keyArrays = keyIndexes.map((_, index) => `$${index + 1}::text[]`).join(', ');
    const keyAliases = keyIndexes.map((_, index) => `k${index}`).join(', ');
    const matches = keyIndexes.map((column, index) => `t.${names[column]!} = d.k${index}::${casts[column]!}`).join(' AND ');
    return { insert, delete: `DELETE FROM ${table} AS t USING unnest(${keyArrays}) AS d(${keyAliases}) WHERE ${matches}` };
  }

  async resume(floor: Epoch | undefined): Promise<Epoch | undefined> {
    // No progress in the store: a sink that never delivered (its name may be an older sink's).
    if (floor === undefined) return undefined;
    const client = await this.connection();
    const found = await client.query<{ epoch: string }>(`SELECT epoch::text AS epoch FROM ${qualifiedTable(this.options, PROGRESS_TABLE)} WHERE sink_name = $1`, [this.sinkName]);
    const row = found.rows[0];
    return row === undefined ? undefined : BigInt(row.epoch);
  }

  async write(changes: readonly EpochChanges[], from: Epoch | undefined, to: Epoch): Promise<number> {
    const client = await this.connection();
    const statements = this.statements!;
    await client.query('BEGIN');
    try {
      const progress = qualifiedTable(this.options, PROGRESS_TABLE);
      const found = await client.query<{ epoch: string }>(`SELECT epoch::text AS epoch FROM ${progress} WHERE sink_name = $1 FOR UPDATE`, [this.sinkName]);
      const stored = found.rows[0] === undefined ? undefined : BigInt(found.rows[0].epoch);
      if (stored !== undefined && stored >= to) {
        await client.query('ROLLBACK');
        return 0;
      }
      if (from !== undefined && stored !== from) throw new Error(`the progress of sink "${this.sinkName}" in PostgreSQL is ${stored ?? 'missing'}, expected ${from}: resuming from it`);
      const batches: StatementRows[] = [];
      if (statements.delete === undefined) {
        const inserts: Row[] = [];
        for (const change of changes) for (const row of change.inserts) inserts.push(row);
        batches.push({ statement: statements.insert, rows: inserts, positions: this.positions });
      } else {
        // upsertKey: each key's last change, deletes and upserts of distinct keys.
        for (const change of changes) if (change.deletes.length > 0) batches.push({ statement: statements.delete, rows: change.deletes, positions: this.keyInRow });
        for (const change of changes) if (change.inserts.length > 0) batches.push({ statement: statements.insert, rows: change.inserts, positions: this.positions });
      }
      const rows = await this.run(client, batches);
      await client.query(`INSERT INTO ${progress} (sink_name, epoch) VALUES ($1, $2) ON CONFLICT (sink_name) DO UPDATE SET epoch = EXCLUDED.epoch`, [this.sinkName, String(to)]);
      await client.query('COMMIT');
      return rows;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /**
   * Runs each statement over its rows in chunks of ROWS_PER_STATEMENT, one text array per column
   * at its positions; a chunk's arrays are built while the chunk before runs. Returns the rows
   * PostgreSQL reports written.
   */
  private async run(client: pg.Client, batches: readonly StatementRows[]): Promise<number> {
    let written = 0;
    let running: Promise<pg.QueryResult> | undefined;
    for (const { statement, rows, positions } of batches) {
      const types = positions.map((position) => this.columns[this.positions.indexOf(position)]!.type);
      for (let first = 0; first < rows.length; first += ROWS_PER_STATEMENT) {
        const end = Math.min(rows.length, first + ROWS_PER_STATEMENT);
        const arrays = positions.map((position, column) => arrayLiteral(rows, first, end, position, types[column]!));
        if (running !== undefined) written += (await running).rowCount ?? 0;
        running = client.query(statement, arrays);
      }
    }
    if (running !== undefined) written += (await running).rowCount ?? 0;
    return written;
  }

  /** After a failed round: the connection is dropped; the next round reconnects and re-reads the progress. */
  reset(): void {
    const client = this.client;
    this.client = undefined;
    void client?.end().catch(() => undefined);
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    // A server that stopped answering must not hold up the engine's close.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([client.end().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, END_TIMEOUT_MS)))]);
    clearTimeout(timer);
  }
}

/** One statement of a delivery and the rows it runs over (their values at `positions`). */
interface StatementRows {
  readonly statement: string;
  readonly rows: readonly Row[];
  readonly positions: readonly number[];
}

const ESCAPED = /[\\"]/g;

/**
 * PostgreSQL's text of a one-dimensional text array of the values at `position` in rows [first,
 * end): each element double-quoted (backslash and double quote escaped), NULL unquoted.
 */
function arrayLiteral(rows: readonly Row[], first: number, end: number, position: number, type: DataType): string {
  let text = '{';
  for (let index = first; index < end; index++) {
    if (index > first) text += ',';
    const value = rows[index]![position] ?? null;
    if (value === null) {
      text += 'NULL';
      continue;
    }
    const formatted = formatValue(value, type);
    text += formatted.indexOf('"') < 0 && formatted.indexOf('\\') < 0 ? `"${formatted}"` : `"${formatted.replace(ESCAPED, '\\$&')}"`;
  }
  return `${text}}`;
}
