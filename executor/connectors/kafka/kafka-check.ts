// CREATE SOURCE (and CREATE TABLE ... WITH (connector = 'kafka')) asks the broker before it
// creates anything: a broker that does not answer within the deadline, or a topic it does not
// have, is a clear error at CREATE time rather than a source that silently reads nothing.
// `validate = 'false'` in WITH (...) skips the check (a topic created later, a broker started
// later). The check connects within the source's `connect.timeout.ms` and gives up after
// KAFKA_CHECK_DEADLINE_MS or its `request.timeout.ms`, whichever is shorter.

import kafkajs from 'kafkajs';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { ConnectorSpec } from '../../../sql/parser/ast.js';
import { kafkaOptions, type KafkaOptions } from './kafka-options.js';
import { kafkaSocketFactory } from '../dns-lookup.js';

const { Kafka, logLevel } = kafkajs;

/** How long the check may take in all (connecting and listing the topics). */
export const KAFKA_CHECK_DEADLINE_MS = 5_000;

const SKIP_HINT = "Add validate = 'false' to WITH (...) to create it without this check.";

/** Whether WITH (...) asks to skip the broker check; any other value than true/false is 22023. */
export function kafkaValidationWanted(options: Readonly<Record<string, string>>): boolean {
  const value = options['validate'];
  if (value === undefined) return true;
  switch (value.trim().toLowerCase()) {
    case 'true': case 'on': case 'yes': case '1':
      return true;
    case 'false': case 'off': case 'no': case '0':
      return false;
    default:
      throw new SqlError(SqlState.invalidParameterValue, `invalid value for "validate": "${value}"`, { hint: "Write validate = 'true' or 'false'." });
  }
}

/** Connects to the brokers and checks the topic exists; throws a SqlError naming what failed. */
export async function checkKafkaTopic(options: KafkaOptions, deadlineMs = Math.min(KAFKA_CHECK_DEADLINE_MS, options.requestTimeoutMs)): Promise<void> {
  const brokers = options.brokers.join(',');
  const kafka = new Kafka({
    clientId: 'oxbow-create-check',
    brokers: [...options.brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: Math.min(options.connectTimeoutMs, deadlineMs),
    socketFactory: kafkaSocketFactory(Math.min(options.connectTimeoutMs, deadlineMs)),
    requestTimeout: deadlineMs,
    retry: { retries: 0 },
  });
  const admin = kafka.admin();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new SqlError(SqlState.connectionFailure, `Kafka broker ${brokers} did not answer within ${deadlineMs} ms`, { hint: `Check properties.bootstrap.server. ${SKIP_HINT}` }));
    }, deadlineMs);
  });
  try {
    const topics = await Promise.race([
      (async () => {
        try {
          await admin.connect();
          return await admin.listTopics();
        } catch (error) {
          throw new SqlError(SqlState.connectionFailure, `cannot reach Kafka broker ${brokers}: ${(error as Error).message}`, { hint: `Check properties.bootstrap.server. ${SKIP_HINT}` });
        }
      })(),
      deadline,
    ]);
    if (!topics.includes(options.topic)) {
      throw new SqlError(SqlState.undefinedObject, `Kafka topic "${options.topic}" does not exist on ${brokers}`, { hint: `Create the topic first. ${SKIP_HINT}` });
    }
  } finally {
    clearTimeout(timer);
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * The Kafka options a statement's broker check needs: CREATE SOURCE or CREATE TABLE with
 * connector = 'kafka' and validation not turned off; undefined for every other statement.
 */
export function kafkaTopicToCheck(node: unknown): KafkaOptions | undefined {
  const record = node as { OxbowCreateSource?: { connector?: ConnectorSpec }; CreateStmt?: { oxbowConnector?: ConnectorSpec } };
  const connector = record.OxbowCreateSource?.connector ?? record.CreateStmt?.oxbowConnector;
  if (connector === undefined || (connector.options['connector'] ?? '').toLowerCase() !== 'kafka') return undefined;
  if (!kafkaValidationWanted(connector.options)) return undefined;
  return kafkaOptions(connector.options);
}
