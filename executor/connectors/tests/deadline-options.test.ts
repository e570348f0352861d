// The deadline options of the Kafka and postgres-cdc connectors: their defaults, values read as
// milliseconds, and a clear 22023 for anything but a positive integer.
import { describe, expect, it } from 'vitest';
import { kafkaOptions } from '../kafka/kafka-options.js';
import { cdcOptions } from '../postgres-cdc/cdc-options.js';

const failure = (run: () => unknown): string => {
  try {
    run();
    return 'accepted';
  } catch (error) {
    const sqlError = error as { code: string; message: string };
    return `${sqlError.code} ${sqlError.message}`;
  }
};

const KAFKA = { connector: 'kafka', topic: 't', 'properties.bootstrap.server': '127.0.0.1:9092' };
const CDC = { connector: 'postgres-cdc', hostname: 'db', username: 'u', 'database.name': 'd', 'table.name': 't', 'slot.name': 's' };

describe('Kafka deadline options', () => {
  it('has defaults and reads each option', () => {
    expect(kafkaOptions(KAFKA)).toMatchObject({ connectTimeoutMs: 3000, requestTimeoutMs: 30_000, transactionTimeoutMs: 60_000 });
    expect(kafkaOptions({ ...KAFKA, 'connect.timeout.ms': '500', 'request.timeout.ms': '2000', 'transaction.timeout.ms': '4000' })).toMatchObject({
      connectTimeoutMs: 500,
      requestTimeoutMs: 2000,
      transactionTimeoutMs: 4000,
    });
  });

  it('answers a bad value with 22023', () => {
    expect(failure(() => kafkaOptions({ ...KAFKA, 'request.timeout.ms': 'soon' }))).toBe('22023 invalid value for "request.timeout.ms": "soon"');
    expect(failure(() => kafkaOptions({ ...KAFKA, 'connect.timeout.ms': '0' }))).toBe('22023 invalid value for "connect.timeout.ms": "0"');
    expect(failure(() => kafkaOptions({ ...KAFKA, 'transaction.timeout.ms': '-5' }))).toBe('22023 invalid value for "transaction.timeout.ms": "-5"');
  });
});

describe('postgres-cdc deadline options', () => {
  it('has defaults and reads each option', () => {
    const defaults = cdcOptions(CDC);
    expect(defaults.connect).toMatchObject({ connectTimeoutMs: 10_000, queryTimeoutMs: 60_000 });
    expect(defaults.keepaliveTimeoutMs).toBe(30_000);
    const set = cdcOptions({ ...CDC, 'connect.timeout.ms': '1000', 'query.timeout.ms': '1500', 'keepalive.timeout.ms': '2000' });
    expect(set.connect).toMatchObject({ connectTimeoutMs: 1000, queryTimeoutMs: 1500 });
    expect(set.keepaliveTimeoutMs).toBe(2000);
  });

  it('answers a bad value with 22023', () => {
    expect(failure(() => cdcOptions({ ...CDC, 'keepalive.timeout.ms': '1.5' }))).toBe('22023 invalid keepalive.timeout.ms "1.5"');
    expect(failure(() => cdcOptions({ ...CDC, 'query.timeout.ms': '' }))).toBe('22023 invalid query.timeout.ms ""');
  });
});
