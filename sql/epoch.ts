// Epochs: the version numbers of committed state. An epoch is derived from physical time:
// milliseconds since the Unix epoch shifted left 16 bits, plus a sequence number for epochs
// within the same millisecond. So a timestamp maps to an epoch without a lookup:
// `epochFromMillis(t)` is the smallest epoch at time t, and "AS OF t" reads the newest epoch
// <= epochFromMillis(t) | 0xffff.

export type Epoch = bigint;

export const EPOCH_SEQUENCE_BITS = 16n;
const SEQUENCE_MASK = (1n << EPOCH_SEQUENCE_BITS) - 1n;

export function epochFromMillis(millis: number, sequence = 0): Epoch {
  return (BigInt(Math.floor(millis)) << EPOCH_SEQUENCE_BITS) | BigInt(sequence);
}

/** The last epoch that can exist at `millis`: the bound for reads AS OF that moment. */
export function lastEpochAtMillis(millis: number): Epoch {
  return (BigInt(Math.floor(millis)) << EPOCH_SEQUENCE_BITS) | SEQUENCE_MASK;
}

export function epochToMillis(epoch: Epoch): number {
  return Number(epoch >> EPOCH_SEQUENCE_BITS);
}

/** The next epoch after `previous` at wall-clock time `nowMillis`: strictly increasing. */
export function nextEpoch(previous: Epoch, nowMillis: number): Epoch {
  const candidate = epochFromMillis(nowMillis);
  return candidate > previous ? candidate : previous + 1n;
}
