// A sink's writer into a PostgreSQL table, exactly once: each delivery is one PostgreSQL
// transaction holding the rows and the sink's row in `oxbow_sink_progress` (the epoch delivered),
// so a delivery is in the target entirely or not at all, and a sink that starts (or lost its
// connection mid-delivery, not knowing whether COMMIT landed) reads that row and resumes after it.
//
// upsert: the changes of every epoch in the delivery collapsed per key (the last change wins;
// a key deleted and re-inserted is one upsert), then one `DELETE ... USING unnest(...)` of the
// deleted keys and one `INSERT ... SELECT FROM unnest(...) ON CONFLICT (key) DO UPDATE` of the
// rest, ROWS_PER_STATEMENT rows per statement. append-only: the inserted rows in epoch order,
// plain INSERTs; deletes are not written (as Kafka's FORMAT PLAIN). Values travel as one text
// array per column (their PostgreSQL text, cast to the target column's type in the statement):
// a statement's parameters are a handful of arrays, not one per value.

import type pg from 'pg';
import type { Epoch } from '../../../sql/epoch.js';
import { formatValue } from '../../../sql/functions.js';
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
  }

  private async connection(): Promise<pg.Client> {
    if (this.client !== undefined) return this.client;
    const client = await connectPostgres(this.options);
    try {
      const target = await describeTarget(client, this.options);
      if (target === undefined) throw new Error(`target table "${this.options.schema}.${this.options.table}" does not exist in PostgreSQL at ${describeAddress(this.options)}`);
      await ensureProgressTable(client, this.options);
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
    if (row === undefined) return undefined;
    const epoch = BigInt(row.epoch);
    // Below the floor: its first delivery never committed here (the row is an older sink's).
    return epoch >= floor ? epoch : undefined;
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
      let rows = 0;
      if (statements.delete === undefined) {
        const inserts: Row[] = [];
        for (const change of changes) for (const row of change.inserts) inserts.push(row);
        rows += await this.run(client, statements.insert, inserts, this.positions);
      } else {
        const { upserts, deletes } = this.collapse(changes);
        rows += await this.run(client, statements.delete, deletes, this.keyInRow);
        rows += await this.run(client, statements.insert, upserts, this.positions);
      }
      await client.query(`INSERT INTO ${progress} (sink_name, epoch) VALUES ($1, $2) ON CONFLICT (sink_name) DO UPDATE SET epoch = EXCLUDED.epoch`, [this.sinkName, String(to)]);
      await client.query('COMMIT');
      return rows;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** Per key the last change of the delivery: rows to upsert, keys to delete. */
  private collapse(changes: readonly EpochChanges[]): { upserts: Row[]; deletes: Row[] } {
    const last = new Map<string, { row: Row; deleted: boolean }>();
    const key = (row: Row): string => {
      let text = '';
      for (const position of this.keyInRow) {
        const value = row[position] ?? null;
        text += value === null ? '\u0000N' : `\u0000V${formatValue(value, this.columns[this.positions.indexOf(position)]!.type)}`;
      }
      return text;
    };
    for (const change of changes) {
      for (const row of change.deletes) last.set(key(row), { row, deleted: true });
      for (const row of change.inserts) last.set(key(row), { row, deleted: false });
    }
    const upserts: Row[] = [];
    const deletes: Row[] = [];
    for (const { row, deleted } of last.values()) (deleted ? deletes : upserts).push(row);
    return { upserts, deletes };
  }

  /** Runs `statement` over `rows` in chunks, one text array per column at `positions`. */
  private async run(client: pg.Client, statement: string, rows: readonly Row[], positions: readonly number[]): Promise<number> {
    let written = 0;
    const types = positions.map((position) => this.columns[this.positions.indexOf(position)]!.type);
    for (let first = 0; first < rows.length; first += ROWS_PER_STATEMENT) {
      const end = Math.min(rows.length, first + ROWS_PER_STATEMENT);
      const arrays: (string | null)[][] = positions.map(() => new Array<string | null>(end - first));
      for (let index = first; index < end; index++) {
        const row = rows[index]!;
        for (let column = 0; column < positions.length; column++) {
          const value = row[positions[column]!] ?? null;
          arrays[column]![index - first] = value === null ? null : formatValue(value, types[column]!);
        }
      }
      const result = await client.query(statement, arrays);
      written += result.rowCount ?? 0;
    }
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
