// The decoder of a schema-encoded payload (ENCODE AVRO, ENCODE PROTOBUF) that MessageDecoder
// (message-decoder.ts) calls where it parses JSON: the value to a record (for FORMAT DEBEZIUM the
// envelope, whose `before`/`after` are records), a record into the payload columns of a row, and
// a tombstone's key into the key columns. Built once per source from its layout (the reader schema
// is in the relation's options since CREATE); schemas by id come from the registry through
// `prefetch`, which the Kafka worker awaits before it decodes a batch, so decoding stays
// synchronous and a registry that is down holds the batch (its lag grows) instead of losing it.

import type { Row } from '../../sql/value.js';
import type { SchemaRegistry } from './schema-registry.js';
import type { SourceLayout } from './source-layout.js';
import { AvroDecoder } from './avro/avro-decoder.js';
import { ProtobufDecoder } from './protobuf/protobuf-decoder.js';

export interface PayloadDecoder {
  /** The registry schemas come from (undefined: a schema from a file). */
  readonly registry: SchemaRegistry | undefined;
  /** The message value decoded to a record (FORMAT DEBEZIUM: the envelope); throws for a bad message. */
  decodeValue(value: Buffer): Record<string, unknown>;
  /** Sets the payload columns of `row` from `record`; throws for a missing required field. */
  fill(record: unknown, row: Row): void;
  /** Sets the key columns of `row` from a schema-encoded message key; false: the key is not schema-encoded. */
  fillKey(key: Buffer, row: Row): boolean;
}

/** The payload decoder of a source's layout; undefined for JSON and CSV. */
export function payloadDecoder(layout: SourceLayout): PayloadDecoder | undefined {
  if (layout.encode === 'avro') return new AvroDecoder(layout);
  if (layout.encode === 'protobuf') return new ProtobufDecoder(layout);
  return undefined;
}
