// `connector = 'nexmark'`: the WITH options (RisingWave's names, checked at CREATE with 22023) and
// the producer that fills a source's rows from the Nexmark generator.
//
// A source reads one table type (`nexmark.table.type` = 'Bid' | 'Auction' | 'Person'); its declared
// columns are matched to the type's fields by name (any subset, any order). Events 0 ..
// `nexmark.event.num` - 1 are dealt round-robin to `nexmark.split.num` splits: split i reads
// events i, i + k, i + 2k ... Its offset is the number of events it has read (rows of other kinds
// count too), so an offset is a position in the split like a Kafka offset.

import type { ColumnDef } from '../../../sql/catalog.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { Row } from '../../../sql/value.js';
import { DEFAULT_NEXMARK_CONFIG, NEXMARK_COLUMNS, NexmarkGenerator, type NexmarkConfig, type NexmarkRowShape, type NexmarkTableType } from './nexmark-generator.js';
import { invalidOption, parseBooleanOption, parseIntegerOption, type SplitProducer } from './split-producer.js';

export interface NexmarkOptions {
  readonly table: NexmarkTableType;
  /** Total events over all splits; undefined: no end. */
  readonly eventCount: number | undefined;
  readonly splits: number;
  readonly maxChunkRows: number;
  /** Nanoseconds between events of one split (0: as fast as possible). */
  readonly minEventGapNs: number;
  readonly config: NexmarkConfig;
}

/** Option keys (without the `nexmark.` prefix) to NexmarkConfig fields. */
const CONFIG_KEYS: Record<string, keyof NexmarkConfig> = {
  'seed': 'seed',
  'first.event.rate': 'firstEventRate',
  'base.time': 'baseTimeMs',
  'active.people': 'activePeople',
  'in.flight.auctions': 'inFlightAuctions',
  'hot.seller.ratio': 'hotSellerRatio',
  'hot.auction.ratio': 'hotAuctionRatio',
  'hot.bidder.ratio': 'hotBidderRatio',
  'hot.channel.ratio': 'hotChannelRatio',
  'avg.person.byte.size': 'avgPersonByteSize',
  'avg.auction.byte.size': 'avgAuctionByteSize',
  'avg.bid.byte.size': 'avgBidByteSize',
};
const OWN_KEYS = ['table.type', 'event.num', 'split.num', 'max.chunk.size', 'min.event.gap.in.ns', 'use.real.time'];
const TABLE_TYPES: Record<string, NexmarkTableType> = { bid: 'Bid', auction: 'Auction', person: 'Person' };

export function nexmarkOptions(options: Readonly<Record<string, string>>): NexmarkOptions {
  const known = [...OWN_KEYS, ...Object.keys(CONFIG_KEYS)].map((key) => `nexmark.${key}`);
  for (const key of Object.keys(options)) {
    if (key !== 'connector' && !known.includes(key)) throw invalidOption(`unknown Nexmark option "${key}"`, `Known options: ${known.join(', ')}.`);
  }
  const typeText = options['nexmark.table.type'];
  if (typeText === undefined) {
    throw new SqlError(SqlState.featureNotSupported, 'a Nexmark source needs nexmark.table.type', {
      hint: "Set nexmark.table.type = 'Bid', 'Auction' or 'Person' (the combined event struct is not supported).",
    });
  }
  const table = TABLE_TYPES[typeText.toLowerCase()];
  if (table === undefined) throw invalidOption(`invalid nexmark.table.type "${typeText}"`, "Use 'Bid', 'Auction' or 'Person'.");
  const eventText = options['nexmark.event.num'];
  const eventCount = eventText === undefined || eventText === '-1' ? undefined : parseIntegerOption('nexmark.event.num', eventText, 0, Number.MAX_SAFE_INTEGER);
  const splits = parseIntegerOption('nexmark.split.num', options['nexmark.split.num'] ?? '1', 1, 1024);
  const maxChunkRows = parseIntegerOption('nexmark.max.chunk.size', options['nexmark.max.chunk.size'] ?? '1024', 1, 1_000_000);
  const minEventGapNs = parseIntegerOption('nexmark.min.event.gap.in.ns', options['nexmark.min.event.gap.in.ns'] ?? '100000', 0, 1e12);
  if (options['nexmark.use.real.time'] !== undefined && parseBooleanOption('nexmark.use.real.time', options['nexmark.use.real.time'])) {
    throw new SqlError(SqlState.featureNotSupported, 'nexmark.use.real.time = true is not supported', { hint: 'Event times follow nexmark.base.time and nexmark.first.event.rate.' });
  }
  const config: Record<string, number> = { ...DEFAULT_NEXMARK_CONFIG };
  for (const [suffix, field] of Object.entries(CONFIG_KEYS)) {
    const text = options[`nexmark.${suffix}`];
    if (text === undefined) continue;
    const minimum = field === 'seed' || field === 'baseTimeMs' ? 0 : 1;
    config[field] = parseIntegerOption(`nexmark.${suffix}`, text, minimum, Number.MAX_SAFE_INTEGER);
  }
  return { table, eventCount, splits, maxChunkRows, minEventGapNs, config: config as unknown as NexmarkConfig };
}

/**
 * Where each canonical field of the table type goes in the relation's row; checks names and types.
 * `eventNumberPosition` (a replayable source's row id column) receives each row's event number.
 */
export function nexmarkShape(table: NexmarkTableType, columns: readonly ColumnDef[], width: number, eventNumberPosition = -1): NexmarkRowShape {
  const fields = NEXMARK_COLUMNS[table];
  const positions = fields.map(() => -1);
  columns.forEach((column, position) => {
    const field = fields.findIndex((candidate) => candidate.name === column.name);
    if (field < 0) {
      throw new SqlError(SqlState.undefinedColumn, `column "${column.name}" is not a field of Nexmark ${table}`, {
        hint: `The fields of ${table}: ${fields.map((candidate) => candidate.name).join(', ')}.`,
      });
    }
    const expected = fields[field]!.type;
    const actual = column.type.name;
    const fits =
      expected === 'int8' ? actual === 'int8' : expected === 'varchar' ? actual === 'varchar' || actual === 'text' : actual === 'timestamp' || actual === 'timestamptz';
    if (!fits || column.type.typmod >= 0) {
      throw new SqlError(SqlState.datatypeMismatch, `column "${column.name}" of a Nexmark ${table} source must be of type ${expected === 'int8' ? 'bigint' : expected === 'varchar' ? 'varchar' : 'timestamp'}`, {
        hint: 'Declare it with that type (without a length) and cast in a view.',
      });
    }
    positions[field] = position;
  });
  return { width, positions, eventNumberPosition };
}

/** The Nexmark producer of a source: split i reads events i, i + k, ... below event.num. */
export class NexmarkProducer implements SplitProducer {
  readonly splits: number;
  /** Event n is a function of (options, n) alone. */
  readonly deterministic = true;
  readonly unitsPerSecond: number;
  private readonly generator: NexmarkGenerator;

  constructor(
    private readonly options: NexmarkOptions,
    private readonly shape: NexmarkRowShape,
  ) {
    this.splits = options.splits;
    this.unitsPerSecond = options.minEventGapNs === 0 ? 0 : 1e9 / options.minEventGapNs;
    this.generator = new NexmarkGenerator(options.config);
  }

  get maxChunkRows(): number {
    return this.options.maxChunkRows;
  }

  end(split: number): number | undefined {
    const total = this.options.eventCount;
    if (total === undefined) return undefined;
    return total <= split ? 0 : Math.ceil((total - split) / this.splits);
  }

  produce(split: number, offset: number, limit: number, out: Row[], maxRows: number): number {
    const k = this.splits;
    const start = split + offset * k;
    const end = split + limit * k;
    const result = this.generator.fill(out, this.options.table, start, k, end, maxRows, this.shape);
    return (result.next - split) / k;
  }

  produceRange(start: number, end: number, out: Row[], maxRows: number): number {
    return this.generator.fill(out, this.options.table, start, 1, end, maxRows, this.shape).next;
  }
}
