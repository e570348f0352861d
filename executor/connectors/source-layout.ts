// Where each part of a decoded message goes in a connector relation's row: the declared columns
// (filled from the payload), the INCLUDE columns (Kafka partition, offset, timestamp, key), and the
// hidden row id of a source without a primary key. Built once from the RelationDef when a source
// starts; the decoders index rows through it.

import type { RelationDef } from '../../sql/catalog.js';
import type { DataType } from '../../sql/types.js';
import { ROW_ID_COLUMN } from '../catalog/catalog.js';

export type SourceFormat = 'plain' | 'upsert' | 'debezium';
export type SourceEncode = 'json' | 'csv' | 'avro' | 'protobuf';

export interface PayloadColumn {
  readonly name: string;
  readonly type: DataType;
  /** Index in the relation's row. */
  readonly position: number;
  /** NOT NULL or part of the primary key: a missing field is an error, not NULL. */
  readonly required: boolean;
}

export interface SourceLayout {
  readonly relationId: number;
  readonly width: number;
  readonly format: SourceFormat;
  readonly encode: SourceEncode;
  /** Declared columns in declaration order (CSV fields map to them by position). */
  readonly payload: readonly PayloadColumn[];
  readonly partitionPosition: number | undefined;
  readonly offsetPosition: number | undefined;
  readonly timestampPosition: number | undefined;
  readonly keyPosition: number | undefined;
  readonly rowIdPosition: number | undefined;
  /** Primary-key positions (for a source without one: the row id). */
  readonly primaryKey: readonly number[];
  /** CSV delimiter (one character). */
  readonly delimiter: string;
  /** The relation's connector options (ENCODE AVRO/PROTOBUF keep their registry and schema here). */
  readonly options: Readonly<Record<string, string>>;
}

export function sourceLayout(relation: RelationDef): SourceLayout {
  const include = new Map((relation.include ?? []).map((entry) => [entry.what, entry.column]));
  const positionOf = (name: string | undefined): number | undefined => {
    if (name === undefined) return undefined;
    const index = relation.columns.findIndex((column) => column.name === name);
    return index < 0 ? undefined : index;
  };
  const special = new Set<string>([...include.values(), ROW_ID_COLUMN]);
  const payload: PayloadColumn[] = [];
  relation.columns.forEach((column, position) => {
    if (special.has(column.name)) return;
    payload.push({ name: column.name, type: column.type, position, required: !column.nullable || relation.primaryKey.includes(position) });
  });
  const rowIdPosition = positionOf(ROW_ID_COLUMN);
  return {
    relationId: relation.id,
    width: relation.columns.length,
    format: (relation.format ?? 'plain') as SourceFormat,
    encode: (relation.encode ?? 'json') as SourceEncode,
    payload,
    partitionPosition: positionOf(include.get('partition')),
    offsetPosition: positionOf(include.get('offset')),
    timestampPosition: positionOf(include.get('timestamp')),
    keyPosition: positionOf(include.get('key')),
    rowIdPosition: rowIdPosition !== undefined && relation.columns[rowIdPosition]!.hidden ? rowIdPosition : undefined,
    primaryKey: relation.primaryKey,
    delimiter: relation.options?.['encode.delimiter'] ?? ',',
    options: relation.options ?? {},
  };
}
