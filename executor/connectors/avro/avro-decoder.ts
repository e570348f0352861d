// ENCODE AVRO payloads in the Confluent wire format: magic byte 0, the writer schema's id, the
// Avro binary record. The reader schema is the one CREATE SOURCE took from the registry (the
// latest under `<topic>-value`, kept in the relation's options as `encode.avro.reader.schema`); each
// writer schema is fetched by id once (schema-registry.ts) and resolved against the reader schema
// with avsc's `createResolver`, once per id, so a message written with an older or newer schema
// (a field added with a default, a field removed) reads as the reader schema says. The columns'
// converters are built once from the reader schema (avro-types.ts): decoding a message is avsc's
// generated decoder plus one loop over prebuilt converters.

import avro from 'avsc';
import type { Row } from '../../../sql/value.js';
import type { PayloadDecoder } from '../payload-decoder.js';
import { confluentSchemaId, CONFLUENT_HEADER_BYTES, registryOptions, SchemaRegistry } from '../schema-registry.js';
import type { SourceLayout } from '../source-layout.js';
import { avroConverter, avroType, namedTypes, recordFields, unwrapNullable, type AvroConverter, type AvroSchema } from './avro-types.js';

export const AVRO_READER_SCHEMA_OPTION = 'encode.avro.reader.schema';
export const AVRO_READER_ID_OPTION = 'encode.avro.reader.id';

type Resolver = ReturnType<avro.Type['createResolver']>;

interface RowFiller {
  readonly fields: readonly string[];
  readonly positions: readonly number[];
  readonly converters: readonly AvroConverter[];
  readonly required: readonly boolean[];
}

/** For FORMAT DEBEZIUM: the record branch of the envelope's `after` field. */
export function debeziumRowSchema(envelope: AvroSchema): AvroSchema {
  const after = recordFields(envelope, 'the Debezium envelope').find((field) => field.name === 'after');
  if (after === undefined) throw new Error('the Debezium envelope schema has no "after" field');
  return unwrapNullable(after.type).schema;
}

export class AvroDecoder implements PayloadDecoder {
  readonly registry: SchemaRegistry;
  private readonly reader: avro.Type;
  private readonly readerId: number;
  /** Per writer schema id: the resolver, or why that schema cannot be read. */
  private readonly resolvers = new Map<number, Resolver | Error>();
  private readonly filler: RowFiller;
  private readonly keyTypes = new Map<number, { type: avro.Type; filler: RowFiller | AvroConverter } | Error>();

  constructor(private readonly layout: SourceLayout) {
    const options = layout.options;
    const registry = registryOptions(options, 'encode.');
    if (registry === undefined) throw new Error('ENCODE AVRO needs schema.registry');
    this.registry = new SchemaRegistry(registry);
    const schemaText = options[AVRO_READER_SCHEMA_OPTION];
    if (schemaText === undefined) throw new Error('the source has no Avro reader schema');
    const schema = JSON.parse(schemaText) as AvroSchema;
    this.reader = avroType(schema);
    this.readerId = Number(options[AVRO_READER_ID_OPTION] ?? -1);
    const rowSchema = layout.format === 'debezium' ? debeziumRowSchema(schema) : schema;
    this.filler = rowFiller(rowSchema, layout, namedTypes(schema), false);
  }

  decodeValue(value: Buffer): Record<string, unknown> {
    const id = confluentSchemaId(value);
    const resolver = this.resolver(id);
    const decoded = this.reader.decode(value, CONFLUENT_HEADER_BYTES, resolver);
    if (decoded.offset < 0) throw new Error(`truncated Avro record (schema id ${id}, ${value.length} bytes)`);
    if (decoded.offset !== value.length) throw new Error(`Avro record of schema id ${id} ends at byte ${decoded.offset} of ${value.length}`);
    return decoded.value as Record<string, unknown>;
  }

  fill(record: unknown, row: Row): void {
    fillRow(this.filler, record as Record<string, unknown>, row);
  }

  fillKey(key: Buffer, row: Row): boolean {
    if (key.length < CONFLUENT_HEADER_BYTES || key[0] !== 0) return false;
    const id = confluentSchemaId(key);
    let keyType = this.keyTypes.get(id);
    if (keyType === undefined) {
      const schema = this.registry.cached(id);
      if (schema === undefined || schema === null) throw new Error(`unknown schema id ${id} of the message key`);
      try {
        const parsed = JSON.parse(schema.schema) as AvroSchema;
        const names = namedTypes(parsed);
        const keyColumns = this.layout.payload.filter((column) => this.layout.primaryKey.includes(column.position));
        const isRecord = typeof parsed === 'object' && !Array.isArray(parsed) && (parsed as { type: unknown }).type === 'record';
        let filler: RowFiller | AvroConverter;
        if (isRecord) filler = rowFiller(parsed, { ...this.layout, payload: keyColumns }, names, true);
        else if (keyColumns.length === 1) filler = avroConverter(parsed, keyColumns[0]!.type, names);
        else throw new Error('a key that is not a record names one key column');
        keyType = { type: avroType(parsed), filler };
      } catch (error) {
        keyType = new Error(`key schema id ${id}: ${error instanceof Error ? error.message : String(error)}`);
      }
      this.keyTypes.set(id, keyType);
    }
    if (keyType instanceof Error) throw keyType;
    const decoded = keyType.type.decode(key, CONFLUENT_HEADER_BYTES);
    if (decoded.offset !== key.length) throw new Error(`truncated Avro key (schema id ${id})`);
    if (typeof keyType.filler === 'function') {
      const column = this.layout.payload.find((candidate) => this.layout.primaryKey.includes(candidate.position))!;
      row[column.position] = keyType.filler(decoded.value);
    } else fillRow(keyType.filler, decoded.value as Record<string, unknown>, row);
    return true;
  }

  private resolver(id: number): Resolver | undefined {
    let resolver = this.resolvers.get(id);
    if (resolver === undefined) {
      if (id === this.readerId) return undefined;
      const writer = this.registry.cached(id);
      if (writer === undefined) throw new Error(`schema id ${id} was not fetched from the registry`);
      if (writer === null) throw new Error(`unknown schema id ${id}: the schema registry has no such schema`);
      try {
        if (writer.schemaType !== 'AVRO') throw new Error(`it is a ${writer.schemaType} schema`);
        resolver = this.reader.createResolver(avroType(JSON.parse(writer.schema)));
      } catch (error) {
        resolver = new Error(`schema id ${id} cannot be read as the source's schema: ${error instanceof Error ? error.message : String(error)}`);
      }
      this.resolvers.set(id, resolver);
    }
    if (resolver instanceof Error) throw resolver;
    return resolver;
  }
}

/**
 * The fields of `record` that fill the layout's payload columns: each column by field name, its
 * converter built from the field's type. A column without a field stays NULL (CREATE refuses
 * declared columns without a field: source-schema.ts); for a key schema it is an error.
 */
function rowFiller(record: AvroSchema, layout: Pick<SourceLayout, 'payload'>, names: Map<string, AvroSchema>, keyOnly: boolean): RowFiller {
  const fields = recordFields(typeof record === 'string' ? names.get(record)! : record);
  const byName = new Map(fields.map((field) => [field.name, field]));
  const out = { fields: [] as string[], positions: [] as number[], converters: [] as AvroConverter[], required: [] as boolean[] };
  for (const column of layout.payload) {
    const field = byName.get(column.name);
    if (field === undefined) {
      if (keyOnly) throw new Error(`the key schema has no field "${column.name}"`);
      continue;
    }
    out.fields.push(column.name);
    out.positions.push(column.position);
    out.converters.push(avroConverter(field.type, column.type, names));
    out.required.push(column.required);
  }
  return out;
}

function fillRow(filler: RowFiller, record: Record<string, unknown>, row: Row): void {
  const { fields, positions, converters, required } = filler;
  for (let c = 0; c < fields.length; c++) {
    const value = record[fields[c]!];
    if (value === null || value === undefined) {
      if (required[c]) throw new Error(`null value in field "${fields[c]}" of a key or NOT NULL column`);
      continue;
    }
    row[positions[c]!] = converters[c]!(value);
  }
}
