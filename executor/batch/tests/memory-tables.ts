// Test double for the batch executor's unit tests: an in-memory catalog (CatalogReader) and
// TableAccess with versions per epoch, so plans can run without the engine or RocksDB.

import type { Row } from '../../../sql/value.js';
import type { ColumnDef, RelationDef, SchemaDef } from '../../../sql/catalog.js';
import type { DataType } from '../../../sql/types.js';
import type { Epoch } from '../../../sql/epoch.js';
import { epochFromMillis, lastEpochAtMillis } from '../../../sql/epoch.js';
import { compareValues } from '../../../sql/functions.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { RowVersion } from '../../../storage/state-table.js';
import type { CatalogReader } from '../../../planner/catalog-reader.js';
import type { TableAccess } from '../index.js';

interface StoredVersion {
  readonly row: Row;
  readonly validFrom: Epoch;
  validTo: Epoch | null;
}

export class MemoryDatabase implements CatalogReader, TableAccess {
  private readonly relations: RelationDef[] = [];
  private readonly versionsById = new Map<number, StoredVersion[]>();
  private nextId = 1000;
  private rowId = 0n;
  /** The epoch new writes get; tests move it forward to create history. */
  epoch: Epoch = epochFromMillis(1_000_000);
  oldestEpoch: Epoch = 0n;

  createTable(name: string, columns: readonly { name: string; type: DataType; nullable?: boolean; defaultSql?: string }[], primaryKey: readonly string[] = []): RelationDef {
    const defs: ColumnDef[] = columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable ?? true, hidden: false, ...(c.defaultSql ? { defaultSql: c.defaultSql } : {}) }));
    let key = primaryKey.map((k) => defs.findIndex((c) => c.name === k));
    if (key.length === 0) {
      defs.push({ name: '_row_id', type: { name: 'int8', typmod: -1 }, nullable: false, hidden: true });
      key = [defs.length - 1];
    }
    const relation: RelationDef = { id: this.nextId++, kind: 'table', schema: 'public', name, columns: defs, primaryKey: key, dependsOn: [] };
    this.relations.push(relation);
    this.versionsById.set(relation.id, []);
    return relation;
  }

  /** A plain view: the planner expands its definition. */
  createView(name: string, definition: string, columns: readonly { name: string; type: DataType }[]): RelationDef {
    const relation: RelationDef = {
      id: this.nextId++,
      kind: 'view',
      schema: 'public',
      name,
      columns: columns.map((c) => ({ name: c.name, type: c.type, nullable: true, hidden: false })),
      primaryKey: [],
      definition,
      dependsOn: [],
    };
    this.relations.push(relation);
    return relation;
  }

  resolveRelation(schema: string | undefined, name: string): RelationDef | undefined {
    return this.relations.find((r) => r.name === name && (schema === undefined || r.schema === schema));
  }

  relationById(id: number): RelationDef | undefined {
    return this.relations.find((r) => r.id === id);
  }

  schema(name: string): SchemaDef | undefined {
    return name === 'public' || name === 'pg_catalog' ? { id: name === 'public' ? 2200 : 11, name } : undefined;
  }

  private keyEquals(relation: RelationDef, a: Row, b: Row): boolean {
    return relation.primaryKey.every((i) => {
      const x = a[i]!;
      const y = b[i]!;
      return x !== null && y !== null && compareValues(x, y, relation.columns[i]!.type) === 0;
    });
  }

  private visible(relation: RelationDef, at: Epoch): Row[] {
    return this.versionsById.get(relation.id)!.filter((v) => v.validFrom <= at && (v.validTo === null || v.validTo > at)).map((v) => v.row);
  }

  *scan(relation: RelationDef, options: { readonly asOf?: Epoch }): Iterable<Row> {
    const at = options.asOf ?? this.epoch;
    if (at < this.oldestEpoch) throw new SqlError(SqlState.snapshotTooOld, `time travel before the retained history of "${relation.name}"`);
    yield* this.visible(relation, at);
  }

  *versions(relation: RelationDef, from: Epoch, to: Epoch): Iterable<RowVersion> {
    for (const v of this.versionsById.get(relation.id)!) {
      if (v.validFrom <= to && (v.validTo === null || v.validTo > from)) yield { row: v.row, validFrom: v.validFrom, validTo: v.validTo };
    }
  }

  lookup(relation: RelationDef, key: Row, options: { readonly asOf?: Epoch }): Row | undefined {
    const at = options.asOf ?? this.epoch;
    if (at < this.oldestEpoch) throw new SqlError(SqlState.snapshotTooOld, `time travel before the retained history of "${relation.name}"`);
    const probe: Row = [];
    relation.primaryKey.forEach((column, i) => (probe[column] = key[i]!));
    return this.visible(relation, at).find((row) => this.keyEquals(relation, row, probe));
  }

  get(relation: RelationDef, key: Row): Row | undefined {
    const probe: Row = [];
    relation.primaryKey.forEach((column, i) => (probe[column] = key[i]!));
    return this.visible(relation, this.epoch).find((row) => this.keyEquals(relation, row, probe));
  }

  insert(relation: RelationDef, row: Row): void {
    this.delete(relation, row);
    this.versionsById.get(relation.id)!.push({ row, validFrom: this.epoch, validTo: null });
  }

  delete(relation: RelationDef, row: Row): void {
    for (const v of this.versionsById.get(relation.id)!) {
      if (v.validTo === null && this.keyEquals(relation, v.row, row)) {
        if (v.validFrom === this.epoch) v.validTo = v.validFrom;
        else v.validTo = this.epoch;
      }
    }
    const list = this.versionsById.get(relation.id)!;
    this.versionsById.set(relation.id, list.filter((v) => v.validTo === null || v.validTo > v.validFrom));
  }

  nextRowId(): bigint {
    return ++this.rowId;
  }

  epochAt(timestampMicros: number): Epoch {
    return lastEpochAtMillis(timestampMicros / 1000);
  }
}
