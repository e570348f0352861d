// scripts/kafka.mjs keeps a broker's data folder while its owner may start it again, and removes
// it when the owner stops it for good: test brokers (each file starts its own, on a free port
// pair) leave nothing behind in .cache/kafka.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { kafkaCache, startBroker } from './broker.js';

it('keeps the data folder across a restart and removes it at the owner\'s stop', { timeout: 240_000 }, async () => {
  const broker = await startBroker();
  const folder = join(kafkaCache(), `run-${broker.port}`);
  try {
    expect(existsSync(join(folder, 'logs', 'meta.properties')), `${folder} formatted`).toBe(true);
    await broker.createTopic('kept', 1);
    await broker.send('kept', [{ value: 'one' }]);
    broker.restart();
    expect(existsSync(join(folder, 'logs', 'meta.properties')), `${folder} kept across the restart`).toBe(true);
    expect(existsSync(join(folder, 'logs', 'kept-0')), 'the topic\'s partition folder kept across the restart').toBe(true);
  } finally {
    await broker.stop();
  }
  expect(existsSync(folder), `${folder} after the owner's stop`).toBe(false);
});
