// ENCODE PROTOBUF payloads of the message type `message = 'pkg.Msg'`, with protobufjs. Two schema
// sources, both resolved at CREATE SOURCE and kept in the relation's options:
//   schema.registry  the latest schema under `<topic>-value` (the .proto text, `protobuf.schema`);
//                    messages carry the Confluent framing: magic byte 0, the writer schema's id
//                    (which must be known to the registry), the message-indexes varint array,
//                    then the message. Protobuf readers read every compatible writer's bytes, so
//                    the message is decoded with the reader's type.
//   schema.location  a FileDescriptorSet file (`protoc --descriptor_set_out`, or protobufjs's
//                    `toDescriptor`), its bytes kept base64 in `protobuf.descriptor`; messages are
//                    the bare Protobuf encoding.
// Columns map by field name (protobuf-types.ts builds the converters once).

import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import type { Row } from '../../../sql/value.js';
import type { PayloadDecoder } from '../payload-decoder.js';
import { confluentSchemaId, CONFLUENT_HEADER_BYTES, registryOptions, SchemaRegistry } from '../schema-registry.js';
import type { SourceLayout } from '../source-layout.js';
import { protobufConverter, type ProtobufConverter } from './protobuf-types.js';

export const PROTOBUF_SCHEMA_OPTION = 'encode.protobuf.schema';
export const PROTOBUF_MESSAGE_OPTION = 'encode.protobuf.message';
export const PROTOBUF_DESCRIPTOR_OPTION = 'encode.protobuf.descriptor';

/** The root of a .proto text or of a FileDescriptorSet's bytes, with field names as written. */
export function protobufRoot(options: Readonly<Record<string, string>>): protobuf.Root {
  const text = options[PROTOBUF_SCHEMA_OPTION];
  if (text !== undefined) return protobufRootOfText(text);
  const encoded = options[PROTOBUF_DESCRIPTOR_OPTION];
  if (encoded !== undefined) return protobufRootOfDescriptorSet(Buffer.from(encoded, 'base64'));
  throw new Error('the source has no Protobuf schema');
}

export function protobufRootOfText(text: string): protobuf.Root {
  const root = protobuf.parse(text, { keepCase: true }).root;
  root.resolveAll();
  return root;
}

export function protobufRootOfDescriptorSet(bytes: Uint8Array): protobuf.Root {
  const set = (descriptor as unknown as { FileDescriptorSet: { decode(bytes: Uint8Array): unknown } }).FileDescriptorSet.decode(bytes);
  const root = (protobuf.Root as unknown as { fromDescriptor(set: unknown, options: { keepCase: boolean }): protobuf.Root }).fromDescriptor(set, { keepCase: true });
  root.resolveAll();
  return root;
}

/** The message type `name` of `root` (a leading dot allowed); throws naming the types it has. */
export function protobufMessage(root: protobuf.Root, name: string): protobuf.Type {
  try {
    return root.lookupType(name.startsWith('.') ? name : `.${name}`);
  } catch {
    const known: string[] = [];
    const walk = (namespace: protobuf.NamespaceBase): void => {
      for (const nested of namespace.nestedArray) {
        if (nested instanceof protobuf.Type) known.push(nested.fullName.slice(1));
        if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) walk(nested);
      }
    };
    walk(root);
    throw new Error(`message type "${name}" is not in the schema (it has ${known.join(', ') || 'no message types'})`);
  }
}

export class ProtobufDecoder implements PayloadDecoder {
  readonly registry: SchemaRegistry | undefined;
  private readonly type: protobuf.Type;
  private readonly fields: string[] = [];
  private readonly positions: number[] = [];
  private readonly converters: ProtobufConverter[] = [];
  private readonly required: boolean[] = [];

  constructor(layout: SourceLayout) {
    const options = layout.options;
    const registry = registryOptions(options, 'encode.');
    this.registry = registry === undefined ? undefined : new SchemaRegistry(registry);
    const root = protobufRoot(options);
    this.type = protobufMessage(root, options[PROTOBUF_MESSAGE_OPTION] ?? '');
    let rowType = this.type;
    if (layout.format === 'debezium') {
      const after = this.type.fields['after'];
      if (after?.resolvedType instanceof protobuf.Type) rowType = after.resolvedType;
      else throw new Error('the Debezium envelope message has no message field "after"');
    }
    for (const column of layout.payload) {
      const field = rowType.fields[column.name];
      if (field === undefined) continue;
      this.fields.push(column.name);
      this.positions.push(column.position);
      this.converters.push(protobufConverter(field, column.type));
      this.required.push(column.required);
    }
  }

  decodeValue(value: Buffer): Record<string, unknown> {
    let start = 0;
    if (this.registry !== undefined) {
      const id = confluentSchemaId(value);
      const schema = this.registry.cached(id);
      if (schema === undefined) throw new Error(`schema id ${id} was not fetched from the registry`);
      if (schema === null) throw new Error(`unknown schema id ${id}: the schema registry has no such schema`);
      start = skipMessageIndexes(value, CONFLUENT_HEADER_BYTES);
    }
    try {
      return this.type.decode(start === 0 ? value : value.subarray(start)) as unknown as Record<string, unknown>;
    } catch (error) {
      throw new Error(`invalid Protobuf message ${this.type.fullName.slice(1)}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  fill(record: unknown, row: Row): void {
    const message = record as Record<string, unknown>;
    const { fields, positions, converters, required } = this;
    for (let c = 0; c < fields.length; c++) {
      const value = message[fields[c]!];
      if (value === null || value === undefined) {
        if (required[c]) throw new Error(`missing field "${fields[c]}" of a key or NOT NULL column`);
        continue;
      }
      row[positions[c]!] = converters[c]!(value);
    }
  }

  fillKey(): boolean {
    return false;
  }
}

/** Skips the Confluent message-indexes array (zigzag varints: a count, then that many indexes; 0 alone is [0]). */
function skipMessageIndexes(value: Uint8Array, at: number): number {
  let position = at;
  const readVarint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (position >= value.length) throw new Error('truncated Protobuf message indexes');
      const byte = value[position++]!;
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return (result >>> 1) ^ -(result & 1);
      shift += 7;
      if (shift > 28) throw new Error('invalid Protobuf message indexes');
    }
  };
  const count = readVarint();
  if (count < 0 || count > 100) throw new Error(`invalid Protobuf message-indexes count ${count}`);
  for (let i = 0; i < count; i++) readVarint();
  return position;
}
