// The WITH options of a Kafka source or sink, checked at CREATE time so a typo is a clear 22023
// error then, not a silent misbehaviour later. Keys are RisingWave's (`topic`,
// `properties.bootstrap.server`, `scan.startup.mode`, `scan.startup.timestamp.millis`).
//
// Deadlines (milliseconds, each a positive integer): `connect.timeout.ms` (3000) for a TCP
// connection to a broker, the DNS lookup included; `request.timeout.ms` (30000) for one request
// (metadata, fetch, produce, offsets); `transaction.timeout.ms` (60000) for a sink's delivery
// transaction from its first send to its commit. A call past its deadline fails and is retried with
// backoff by the reader or the sink; the trouble shows in oxbow_catalog.source_errors or
// sink_errors.

import { SqlError, SqlState } from '../../../sql/errors.js';
import { parseValue } from '../../../sql/functions.js';
import { type } from '../../../sql/types.js';

export type StartupMode = { readonly kind: 'earliest' } | { readonly kind: 'latest' } | { readonly kind: 'timestamp'; readonly millis: number };

export interface KafkaOptions {
  readonly topic: string;
  readonly brokers: readonly string[];
  readonly startup: StartupMode;
  /** Messages longer than this (key + value bytes) are recorded as errors, not decoded. */
  readonly maxMessageBytes: number;
  /** Deadline of a TCP connection to a broker (the name lookup included). */
  readonly connectTimeoutMs: number;
  /** Deadline of one request to a broker. */
  readonly requestTimeoutMs: number;
  /** Deadline of a sink's Kafka transaction, first send to commit. */
  readonly transactionTimeoutMs: number;
}

export const DEFAULT_KAFKA_CONNECT_TIMEOUT_MS = 3_000;
export const DEFAULT_KAFKA_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_KAFKA_TRANSACTION_TIMEOUT_MS = 60_000;

const KNOWN = new Set([
  'connector',
  'topic',
  'properties.bootstrap.server',
  'properties.bootstrap.servers',
  'scan.startup.mode',
  'scan.startup.timestamp.millis',
  'scan.startup.timestamp_millis',
  'max.message.bytes',
  'primary_key',
  'force_append_only',
  // CREATE-time broker check on or off (kafka-check.ts).
  'validate',
  'connect.timeout.ms',
  'request.timeout.ms',
  'transaction.timeout.ms',
]);

const DEFAULT_MAX_MESSAGE_BYTES = 1 << 20;

function invalid(message: string, hint?: string): SqlError {
  return new SqlError(SqlState.invalidParameterValue, message, hint === undefined ? {} : { hint });
}

export function kafkaOptions(options: Readonly<Record<string, string>>): KafkaOptions {
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key) && !key.startsWith('encode.')) throw invalid(`unknown Kafka option "${key}"`, `Known options: ${[...KNOWN].join(', ')}.`);
  }
  const topic = options['topic'];
  if (topic === undefined || topic === '') throw invalid('the Kafka option "topic" is required');
  const servers = options['properties.bootstrap.server'] ?? options['properties.bootstrap.servers'];
  if (servers === undefined || servers.trim() === '') throw invalid('the Kafka option "properties.bootstrap.server" is required', "For example: properties.bootstrap.server = '127.0.0.1:9092'.");
  const brokers = servers.split(',').map((server) => server.trim());
  for (const broker of brokers) {
    if (!/^[^:\s]+:\d{1,5}$/.test(broker)) throw invalid(`invalid Kafka broker address "${broker}"`, 'Write host:port, several separated by commas.');
  }
  const maxText = options['max.message.bytes'];
  const maxMessageBytes = maxText === undefined ? DEFAULT_MAX_MESSAGE_BYTES : Number(maxText);
  if (!Number.isInteger(maxMessageBytes) || maxMessageBytes <= 0) throw invalid(`invalid value for "max.message.bytes": "${maxText}"`);
  return {
    topic,
    brokers,
    startup: startupMode(options),
    maxMessageBytes,
    connectTimeoutMs: deadline(options, 'connect.timeout.ms', DEFAULT_KAFKA_CONNECT_TIMEOUT_MS),
    requestTimeoutMs: deadline(options, 'request.timeout.ms', DEFAULT_KAFKA_REQUEST_TIMEOUT_MS),
    transactionTimeoutMs: deadline(options, 'transaction.timeout.ms', DEFAULT_KAFKA_TRANSACTION_TIMEOUT_MS),
  };
}

function deadline(options: Readonly<Record<string, string>>, name: string, fallback: number): number {
  const text = options[name];
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text.trim()) || Number(text) <= 0) throw invalid(`invalid value for "${name}": "${text}"`, 'Milliseconds, a positive integer.');
  return Number(text);
}

function startupMode(options: Readonly<Record<string, string>>): StartupMode {
  const mode = (options['scan.startup.mode'] ?? 'earliest').trim();
  const millisText = options['scan.startup.timestamp.millis'] ?? options['scan.startup.timestamp_millis'];
  if (millisText !== undefined) return { kind: 'timestamp', millis: parseMillis(millisText) };
  switch (mode.toLowerCase()) {
    case 'earliest':
      return { kind: 'earliest' };
    case 'latest':
      return { kind: 'latest' };
    case 'timestamp':
      throw invalid('scan.startup.mode = \'timestamp\' needs "scan.startup.timestamp.millis"');
    default:
      // A timestamp given as the mode itself: milliseconds since 1970 or timestamptz text.
      return { kind: 'timestamp', millis: parseMillis(mode) };
  }
}

function parseMillis(text: string): number {
  if (/^\d+$/.test(text.trim())) return Number(text.trim());
  try {
    const micros = parseValue(text, type('timestamptz')) as number;
    if (!Number.isFinite(micros)) throw new Error('infinite');
    return Math.floor(micros / 1000);
  } catch {
    throw invalid(`invalid value for "scan.startup.mode": "${text}"`, "Use 'earliest', 'latest', milliseconds since 1970 or a timestamp.");
  }
}
