// The Kafka cluster tests' producer: JSON messages {"id","k","v"} with ids 0, 1, 2, ... in order,
// k = id mod `keys`, v = `valueOf(id)`, message id to partition id mod `partitions`, a batch of
// `batch` every `pauseMs` until stopped, so a test computes what its views must hold from the ids.

import type { Broker } from '../kafka/broker.js';

export interface IdProducerOptions {
  readonly topic: string;
  readonly keys: number;
  readonly partitions: number;
  readonly valueOf: (id: number) => number;
  /** Messages per send. */
  readonly batch: number;
  /** The wait after each send. */
  readonly pauseMs: number;
}

export interface IdProducer {
  /** How many messages were sent so far (ids 0 to produced - 1). */
  produced(): number;
  /** Stops after the send under way; resolves with the messages sent (a send's failure rejects). */
  stop(): Promise<number>;
}

/** Starts producing into `options.topic` at once. */
export function produceIds(broker: Broker, options: IdProducerOptions): IdProducer {
  let produced = 0;
  let producing = true;
  const running = (async () => {
    while (producing) {
      const messages = [];
      for (let index = 0; index < options.batch; index++) {
        const id = produced + index;
        messages.push({ value: JSON.stringify({ id, k: id % options.keys, v: options.valueOf(id) }), partition: id % options.partitions });
      }
      await broker.send(options.topic, messages);
      produced += messages.length;
      await new Promise((resolveWait) => setTimeout(resolveWait, options.pauseMs));
    }
  })();
  return {
    produced: () => produced,
    async stop() {
      producing = false;
      await running;
      return produced;
    },
  };
}
