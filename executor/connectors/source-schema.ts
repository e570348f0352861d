// The schema of an ENCODE AVRO / PROTOBUF source, resolved at CREATE: the registry's latest
// schema under `<topic>-value` (TopicNameStrategy) or a FileDescriptorSet file, fetched before
// the DDL handler runs (`prepareConnectorSchema`, awaited by ddl/ddl-statement.ts, since the
// handlers are synchronous) and read back by ddl/create-source.ts (`resolvedSchema`). It gives
// the columns when the source declares none, checks declared columns against the schema (42703 a
// column without a field, 42804 a type the column cannot hold; 42704 no subject, 28000 credentials refused, 08006 unreachable), and the options the decoders
// read (the reader schema, kept in the relation so a restart reads with the same schema).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ConnectorSpec, OxbowCreateSource, ParsedStatement } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { DataType } from '../../sql/types.js';
import { AVRO_READER_ID_OPTION, AVRO_READER_SCHEMA_OPTION, debeziumRowSchema } from './avro/avro-decoder.js';
import { avroColumns, avroConverter, IncompatibleField, namedTypes, recordFields, type AvroSchema, type SchemaColumn } from './avro/avro-types.js';
import { PROTOBUF_DESCRIPTOR_OPTION, PROTOBUF_MESSAGE_OPTION, PROTOBUF_SCHEMA_OPTION, protobufMessage, protobufRootOfDescriptorSet, protobufRootOfText } from './protobuf/protobuf-decoder.js';
import { protobufColumns, protobufConverter } from './protobuf/protobuf-types.js';
import { registryOptions, RegistryNotFound, RegistryUnauthorized, SchemaRegistry } from './schema-registry.js';
import type protobuf from 'protobufjs';

export interface DeclaredColumn {
  readonly name: string;
  readonly type: DataType;
}

export interface ResolvedSchema {
  /** Added to the relation's options (the decoders read them). */
  readonly options: Readonly<Record<string, string>>;
  /** The columns of the schema's record (FORMAT DEBEZIUM: of its `after`). */
  readonly columns: readonly SchemaColumn[];
  /** Checks that the schema can fill the declared columns; throws SqlError 42703 / 42804. */
  check(columns: readonly DeclaredColumn[]): void;
}

const resolved = new WeakMap<ConnectorSpec, ResolvedSchema>();

/** The schema `prepareConnectorSchema` resolved for `connector`. */
export function resolvedSchema(connector: ConnectorSpec): ResolvedSchema | undefined {
  return resolved.get(connector);
}

function connectorOf(parsed: ParsedStatement): ConnectorSpec | undefined {
  const node = parsed.node as { OxbowCreateSource?: OxbowCreateSource; CreateStmt?: { oxbowConnector?: ConnectorSpec } };
  return node.OxbowCreateSource?.connector ?? node.CreateStmt?.oxbowConnector;
}

/** For CREATE SOURCE / connector TABLE with ENCODE AVRO or PROTOBUF: fetches and keeps the schema. */
export async function prepareConnectorSchema(parsed: ParsedStatement): Promise<void> {
  const connector = connectorOf(parsed);
  if (connector === undefined) return;
  const encode = (connector.encode ?? '').toLowerCase();
  if (encode !== 'avro' && encode !== 'protobuf') return;
  if ((connector.options['connector'] ?? '').toLowerCase() !== 'kafka') return;
  const encodeOptions = connector.encodeOptions ?? {};
  const format = (connector.format ?? 'plain').toLowerCase();
  const topic = connector.options['topic'] ?? '';
  const registry = registryOptions(encodeOptions);
  const options: Record<string, string> = {};
  for (const name of ['schema.registry', 'schema.registry.username', 'schema.registry.password']) {
    if (encodeOptions[name] !== undefined) options[`encode.${name}`] = encodeOptions[name]!;
  }
  if (encode === 'avro') {
    if (registry === undefined) throw new SqlError(SqlState.invalidParameterValue, "ENCODE AVRO needs schema.registry = 'http://host:port'");
    const latest = await latestSchema(new SchemaRegistry(registry), `${topic}-value`);
    if (latest.schemaType !== 'AVRO') throw new SqlError(SqlState.invalidParameterValue, `the schema registry's subject "${topic}-value" holds a ${latest.schemaType} schema, not Avro`);
    const schema = JSON.parse(latest.schema) as AvroSchema;
    const names = namedTypes(schema);
    let rowSchema: AvroSchema;
    let columns: SchemaColumn[];
    try {
      rowSchema = format === 'debezium' ? debeziumRowSchema(schema) : schema;
      columns = avroColumns(rowSchema, names);
    } catch (error) {
      throw new SqlError(SqlState.datatypeMismatch, `the schema of subject "${topic}-value": ${error instanceof Error ? error.message : String(error)}`);
    }
    options[AVRO_READER_SCHEMA_OPTION] = latest.schema;
    options[AVRO_READER_ID_OPTION] = String(latest.id);
    const fields = new Map(recordFields(typeof rowSchema === 'string' ? names.get(rowSchema)! : rowSchema).map((field) => [field.name, field]));
    resolved.set(connector, {
      options,
      columns,
      check(declared) {
        for (const column of declared) {
          const field = fields.get(column.name);
          if (field === undefined) throw new SqlError(SqlState.undefinedColumn, `column "${column.name}" has no field in the Avro schema of subject "${topic}-value" (id ${latest.id})`);
          incompatible(() => avroConverter(field.type, column.type, names), column.name, `subject "${topic}-value"`);
        }
      },
    });
    return;
  }
  const messageName = encodeOptions['message'];
  if (messageName === undefined) throw new SqlError(SqlState.invalidParameterValue, "ENCODE PROTOBUF needs message = 'package.Message'");
  options[PROTOBUF_MESSAGE_OPTION] = messageName;
  let root: protobuf.Root;
  const location = encodeOptions['schema.location'];
  if (registry !== undefined) {
    const latest = await latestSchema(new SchemaRegistry(registry), `${topic}-value`);
    if (latest.schemaType !== 'PROTOBUF') throw new SqlError(SqlState.invalidParameterValue, `the schema registry's subject "${topic}-value" holds a ${latest.schemaType} schema, not Protobuf`);
    root = parseOr(() => protobufRootOfText(latest.schema), `the Protobuf schema of subject "${topic}-value"`);
    options[PROTOBUF_SCHEMA_OPTION] = latest.schema;
  } else if (location !== undefined) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(location.startsWith('file:') ? fileURLToPath(location) : location);
    } catch (error) {
      throw new SqlError(SqlState.undefinedFile, `could not read the Protobuf descriptor set "${location}": ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
    root = parseOr(() => protobufRootOfDescriptorSet(bytes), `the FileDescriptorSet "${location}"`);
    options[PROTOBUF_DESCRIPTOR_OPTION] = bytes.toString('base64');
  } else {
    throw new SqlError(SqlState.invalidParameterValue, "ENCODE PROTOBUF needs schema.registry = 'http://host:port' or schema.location = 'file:///path/descriptor.pb'");
  }
  const message = parseOr(() => protobufMessage(root, messageName), 'ENCODE PROTOBUF');
  let rowType = message;
  if (format === 'debezium') {
    const after = message.fields['after']?.resolvedType;
    if (after === undefined || after === null || !('fieldsArray' in after)) throw new SqlError(SqlState.datatypeMismatch, `message "${messageName}" has no message field "after" for FORMAT DEBEZIUM`);
    rowType = after as protobuf.Type;
  }
  const columns = parseOr(() => protobufColumns(rowType), `message "${messageName}"`);
  resolved.set(connector, {
    options,
    columns,
    check(declared) {
      for (const column of declared) {
        const field = rowType.fields[column.name];
        if (field === undefined) throw new SqlError(SqlState.undefinedColumn, `column "${column.name}" has no field in Protobuf message "${messageName}"`);
        incompatible(() => protobufConverter(field, column.type), column.name, `message "${messageName}"`);
      }
    },
  });
}

async function latestSchema(registry: SchemaRegistry, subject: string): Promise<{ id: number; schema: string; schemaType: string }> {
  try {
    return await registry.latest(subject);
  } catch (error) {
    if (error instanceof RegistryNotFound) throw new SqlError(SqlState.undefinedObject, `the schema registry has no subject "${subject}"`, { hint: 'Register the topic\'s value schema under "<topic>-value" first.' });
    if (error instanceof RegistryUnauthorized) throw new SqlError(SqlState.invalidAuthorizationSpecification, error.message, { hint: 'Give schema.registry.username and schema.registry.password.' });
    throw new SqlError(SqlState.connectionFailure, error instanceof Error ? error.message : String(error));
  }
}

function parseOr<T>(make: () => T, what: string): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof SqlError) throw error;
    throw new SqlError(SqlState.invalidParameterValue, `${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function incompatible(make: () => unknown, column: string, where: string): void {
  try {
    make();
  } catch (error) {
    if (error instanceof IncompatibleField) throw new SqlError(SqlState.datatypeMismatch, `column "${column}" is incompatible with ${where}: ${error.message}`);
    throw error;
  }
}
