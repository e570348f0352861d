// The Nexmark event generator (an online auction: people, auctions, bids), following the
// specification in ../shared/nexmark/README.md and the reference generator that RisingWave and the
// Beam/Flink Nexmark suites use (nexmark-rs): the event kind by `n % 50`, the event time from the
// event rate, ids counted from 1000, hot sellers / auctions / bidders, log-scale prices, hot
// channels with fixed URLs, `extra` padding to the average event sizes.
//
// Pure: no I/O, no clock. Every event n is a function of (config, n) alone: its random numbers
// come from a generator seeded with (seed, n), so any range of events can be produced in any order
// (splits, a restart at a committed event number) with the same result.
//
// Rows come in oxbow's value representation (sql/value.ts): int8 are bigint, varchar are strings,
// timestamps are numbers of microseconds since 1970 (Nexmark's times have millisecond precision).
// `NexmarkGenerator.fill` appends rows of one table type to an array, one array per row and no
// per-row closures; a `NexmarkRowShape` places the fields where the caller's rows want them (a
// connector relation's declared column order plus its hidden row id), so no second copy is made.

import type { Row } from '../../../sql/value.js';

export type NexmarkTableType = 'Person' | 'Auction' | 'Bid';

/** Event kinds as `eventKind` returns them (RisingWave's `event_type`). */
export const PERSON = 0;
export const AUCTION = 1;
export const BID = 2;

/** Each table type's columns in canonical order, with their SQL types. */
export const NEXMARK_COLUMNS: Readonly<Record<NexmarkTableType, readonly { readonly name: string; readonly type: 'int8' | 'varchar' | 'timestamp' }[]>> = {
  Person: [
    { name: 'id', type: 'int8' },
    { name: 'name', type: 'varchar' },
    { name: 'email_address', type: 'varchar' },
    { name: 'credit_card', type: 'varchar' },
    { name: 'city', type: 'varchar' },
    { name: 'state', type: 'varchar' },
    { name: 'date_time', type: 'timestamp' },
    { name: 'extra', type: 'varchar' },
  ],
  Auction: [
    { name: 'id', type: 'int8' },
    { name: 'item_name', type: 'varchar' },
    { name: 'description', type: 'varchar' },
    { name: 'initial_bid', type: 'int8' },
    { name: 'reserve', type: 'int8' },
    { name: 'date_time', type: 'timestamp' },
    { name: 'expires', type: 'timestamp' },
    { name: 'seller', type: 'int8' },
    { name: 'category', type: 'int8' },
    { name: 'extra', type: 'varchar' },
  ],
  Bid: [
    { name: 'auction', type: 'int8' },
    { name: 'bidder', type: 'int8' },
    { name: 'price', type: 'int8' },
    { name: 'channel', type: 'varchar' },
    { name: 'url', type: 'varchar' },
    { name: 'date_time', type: 'timestamp' },
    { name: 'extra', type: 'varchar' },
  ],
};

/** Generator parameters; every field has the reference generator's default. */
export interface NexmarkConfig {
  /** Seeds every event's random numbers (default 0). Same seed, same events. */
  readonly seed: number;
  /** Events per second of event time (default 10,000): event n happens at baseTime + n / rate. */
  readonly firstEventRate: number;
  /** Event time of event 0, milliseconds since 1970 (default 2015-07-15 00:00:00 UTC). */
  readonly baseTimeMs: number;
  /** People among which non-hot sellers and bidders are drawn (default 1000). */
  readonly activePeople: number;
  /** Auctions among which non-hot bids are drawn (default 100). */
  readonly inFlightAuctions: number;
  /** 1 in this many sellers is random, the rest hot (default 4). */
  readonly hotSellerRatio: number;
  /** 1 in this many bids goes to a random auction, the rest to a hot one (default 2). */
  readonly hotAuctionRatio: number;
  /** 1 in this many bidders is random, the rest hot (default 4). */
  readonly hotBidderRatio: number;
  /** 1 in this many bids has a random channel, the rest a hot one (default 2). */
  readonly hotChannelRatio: number;
  readonly avgPersonByteSize: number;
  readonly avgAuctionByteSize: number;
  readonly avgBidByteSize: number;
}

export const DEFAULT_NEXMARK_CONFIG: NexmarkConfig = {
  seed: 0,
  firstEventRate: 10_000,
  baseTimeMs: 1_436_918_400_000,
  activePeople: 1000,
  inFlightAuctions: 100,
  hotSellerRatio: 4,
  hotAuctionRatio: 2,
  hotBidderRatio: 4,
  hotChannelRatio: 2,
  avgPersonByteSize: 200,
  avgAuctionByteSize: 500,
  avgBidByteSize: 100,
};

// Fixed by the reference generator.
const PROPORTION_DENOMINATOR = 50;
const PERSON_PROPORTION = 1;
const AUCTION_PROPORTION = 3;
const FIRST_PERSON_ID = 1000;
const FIRST_AUCTION_ID = 1000;
const FIRST_CATEGORY_ID = 10;
const NUM_CATEGORIES = 5;
const PERSON_ID_LEAD = 10;
const AUCTION_ID_LEAD = 10;
const HOT_RATIO_2 = 100;
const CHANNELS = 10_000;
const MIN_STRING_LENGTH = 3;

const FIRST_NAMES = ['peter', 'paul', 'luke', 'john', 'saul', 'vicky', 'kate', 'julie', 'sarah', 'deiter', 'walter'];
const LAST_NAMES = ['shultz', 'abrams', 'spencer', 'white', 'bartels', 'walton', 'smith', 'jones', 'noris'];
const CITIES = ['phoenix', 'los angeles', 'san francisco', 'boise', 'portland', 'bend', 'redmond', 'seattle', 'kent', 'cheyenne'];
const STATES = ['az', 'ca', 'id', 'or', 'wa', 'wy'];
const HOT_CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];
const HOT_URLS = [
  'https://www.nexmark.com/vzbh/gkz_/yha/item.htm?query=1',
  'https://www.nexmark.com/_mks/ppeq/sic/item.htm?query=1',
  'https://www.nexmark.com/pd_/a_y/p_f_/item.htm?query=1',
  'https://www.nexmark.com/rxa/bnn/fl_/item.htm?query=1',
];

/** Event n's kind: PERSON when n % 50 == 0, AUCTION when 1..3, BID otherwise. */
export function eventKind(n: number): number {
  const offset = n % PROPORTION_DENOMINATOR;
  return offset < PERSON_PROPORTION ? PERSON : offset < PERSON_PROPORTION + AUCTION_PROPORTION ? AUCTION : BID;
}

/** Event n's time in milliseconds since 1970: base + floor(n * (1e6 / rate) / 1000). */
export function eventTimeMs(n: number, config: NexmarkConfig = DEFAULT_NEXMARK_CONFIG): number {
  return config.baseTimeMs + Math.floor((n * (1e6 / config.firstEventRate)) / 1000);
}

/** The number of people created by events 0..n (the id of the last person, less 1000). */
export function lastPersonId(n: number): number {
  const epoch = Math.floor(n / PROPORTION_DENOMINATOR);
  let offset = n % PROPORTION_DENOMINATOR;
  if (PERSON_PROPORTION <= offset) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}

/** The id (less 1000) of the last auction created by events 0..n. */
export function lastAuctionId(n: number): number {
  let epoch = Math.floor(n / PROPORTION_DENOMINATOR);
  let offset = n % PROPORTION_DENOMINATOR;
  if (offset < PERSON_PROPORTION) {
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (PERSON_PROPORTION + AUCTION_PROPORTION <= offset) offset = AUCTION_PROPORTION - 1;
  else offset -= PERSON_PROPORTION;
  return epoch * AUCTION_PROPORTION + offset;
}

/** Where the fields of a table type go in the produced rows. */
export interface NexmarkRowShape {
  /** Length of each produced row. */
  readonly width: number;
  /** For each canonical field (NEXMARK_COLUMNS order), its position in the row, or -1 to leave it out. */
  readonly positions: readonly number[];
  /** Where the event number goes (a bigint: a replayable source's row id), if anywhere. */
  readonly eventNumberPosition?: number;
}

/** The canonical shape: the table type's columns in NEXMARK_COLUMNS order. */
export function canonicalShape(table: NexmarkTableType): NexmarkRowShape {
  const count = NEXMARK_COLUMNS[table].length;
  return { width: count, positions: Array.from({ length: count }, (_, i) => i) };
}

/** Result of `fill`: the next event number to generate (pass it back to continue). */
export interface FillResult {
  readonly next: number;
  readonly rows: number;
}

const POOL_SIZE = 1 << 16;

/** What a seed determines besides the events: string pools and channel URLs (built once per seed). */
interface SeedTables {
  readonly letters: string;
  readonly spaced: string;
  readonly channelNames: string[];
  readonly channelUrls: string[];
}
const TABLES_BY_SEED = new Map<number, SeedTables>();
const TWO_32 = 4294967296;

/**
 * A Nexmark generator for one config. `fill` produces the rows of one table type for the event
 * numbers start, start + step, start + 2 step, ... below `end`, at most `maxRows` of them.
 */
export class NexmarkGenerator {
  readonly config: NexmarkConfig;
  // The per-event random generator's state (sfc32), reseeded for each event.
  private a = 0;
  private b = 0;
  private c = 0;
  private d = 0;
  private readonly seedLow: number;
  private readonly seedHigh: number;
  /** Random letters (`letters`) and letters with 1 in 13 a delimiter (`spaced`, `underscored`): strings are slices of them. */
  private readonly letters: string;
  private readonly spaced: string;
  private readonly channelNames: string[];
  private readonly channelUrls: string[];
  private readonly interEventDelayUs: number;
  /** The last bid's auction and bidder ids, and their bigints (reused while the id repeats). */
  private auctionNumber = -1;
  private auctionBigint = 0n;
  private bidderNumber = -1;
  private bidderBigint = 0n;
  /**
   * The last bid's event time in milliseconds and its value in microseconds: ten events share a
   * millisecond at the default rate, and the bids among them share one value (a timestamp is a
   * heap number in a row, made once per millisecond instead of once per bid).
   */
  private timeMs = -1;
  private timeValue: Row[number] = null;
  private readonly eventsForAuctions: number;

  constructor(config: Partial<NexmarkConfig> = {}) {
    this.config = { ...DEFAULT_NEXMARK_CONFIG, ...config };
    const seed = this.config.seed;
    this.seedLow = seed >>> 0;
    this.seedHigh = Math.floor(seed / TWO_32) >>> 0;
    this.interEventDelayUs = 1e6 / this.config.firstEventRate;
    this.eventsForAuctions = Math.floor((this.config.inFlightAuctions * PROPORTION_DENOMINATOR) / AUCTION_PROPORTION);
    let tables = TABLES_BY_SEED.get(seed);
    if (tables === undefined) {
      tables = this.tables();
      if (TABLES_BY_SEED.size >= 8) TABLES_BY_SEED.clear();
      TABLES_BY_SEED.set(seed, tables);
    }
    this.letters = tables.letters;
    this.spaced = tables.spaced;
    this.channelNames = tables.channelNames;
    this.channelUrls = tables.channelUrls;
  }

  /** Pools and channel URLs, from a generator seeded with the seed alone (event "-1"). */
  private tables(): SeedTables {
    this.reseed(-1);
    const letters = this.pool(-1);
    const spaced = this.pool(32);
    const underscored = this.pool(95);
    const channelNames = new Array<string>(CHANNELS);
    const channelUrls = new Array<string>(CHANNELS);
    for (let i = 0; i < CHANNELS; i++) {
      channelNames[i] = `channel-${i}`;
      let url = `https://www.nexmark.com/${this.slice(underscored, 5)}/${this.slice(underscored, 5)}/${this.slice(underscored, 5)}/item.htm?query=1`;
      // Java's Math.abs(Integer.reverse(i)), as the reference generator appends it.
      if (this.below(10) > 0) url += `&channel_id=${javaAbs(reverseBits32(i))}`;
      channelUrls[i] = url;
    }
    return { letters, spaced, channelNames, channelUrls };
  }

  /**
   * Appends to `out` the rows of `table` for events start, start + step, ... below `end` (other
   * event kinds are skipped), at most `maxRows` rows; returns the next event number to generate.
   */
  fill(out: Row[], table: NexmarkTableType, start: number, step: number, end: number, maxRows: number, shape: NexmarkRowShape = canonicalShape(table)): FillResult {
    const kind = table === 'Person' ? PERSON : table === 'Auction' ? AUCTION : BID;
    const p = shape.positions;
    const width = shape.width;
    const eventNumberAt = shape.eventNumberPosition ?? -1;
    let n = start;
    let rows = 0;
    while (n < end && rows < maxRows) {
      if (eventKind(n) === kind) {
        const row: Row = new Array(width);
        for (let i = 0; i < width; i++) row[i] = null;
        if (kind === BID) this.bid(n, row, p);
        else if (kind === AUCTION) this.auction(n, row, p);
        else this.person(n, row, p);
        if (eventNumberAt >= 0) row[eventNumberAt] = BigInt(n);
        out.push(row);
        rows++;
      }
      n += step;
    }
    return { next: n, rows };
  }

  /** One event of any kind as a canonical row of its table type, with its kind. */
  event(n: number): { kind: number; table: NexmarkTableType; row: Row } {
    const kind = eventKind(n);
    const table: NexmarkTableType = kind === PERSON ? 'Person' : kind === AUCTION ? 'Auction' : 'Bid';
    const out: Row[] = [];
    this.fill(out, table, n, 1, n + 1, 1);
    return { kind, table, row: out[0]! };
  }

  private person(n: number, row: Row, p: readonly number[]): void {
    this.reseed(n);
    const timeMs = eventTimeMs(n, this.config);
    const name = `${FIRST_NAMES[this.below(FIRST_NAMES.length)]!} ${LAST_NAMES[this.below(LAST_NAMES.length)]!}`;
    const email = `${this.randomString(7)}@${this.randomString(5)}.com`;
    const card = `${this.digits4()} ${this.digits4()} ${this.digits4()} ${this.digits4()}`;
    const city = CITIES[this.below(CITIES.length)]!;
    const state = STATES[this.below(STATES.length)]!;
    const size = 8 + name.length + email.length + card.length + city.length + state.length + 8;
    put(row, p[0]!, BigInt(lastPersonId(n) + FIRST_PERSON_ID));
    put(row, p[1]!, name);
    put(row, p[2]!, email);
    put(row, p[3]!, card);
    put(row, p[4]!, city);
    put(row, p[5]!, state);
    put(row, p[6]!, timeMs * 1000);
    put(row, p[7]!, this.extra(size, this.config.avgPersonByteSize));
  }

  private auction(n: number, row: Row, p: readonly number[]): void {
    this.reseed(n);
    const config = this.config;
    const timeMs = eventTimeMs(n, config);
    const initialBid = this.price();
    const seller = this.below(config.hotSellerRatio) > 0 ? Math.floor(lastPersonId(n) / HOT_RATIO_2) * HOT_RATIO_2 : this.nextPersonId(n);
    const itemName = this.randomString(20);
    const description = this.randomString(100);
    const reserve = initialBid + this.price();
    const horizonMs = eventTimeMs(n + this.eventsForAuctions, config) - timeMs;
    const expiresMs = timeMs + 1 + this.below(Math.max(horizonMs * 2, 1));
    const category = FIRST_CATEGORY_ID + this.below(NUM_CATEGORIES);
    const size = 8 + itemName.length + description.length + 8 + 8 + 8 + 8 + 8 + 8;
    put(row, p[0]!, BigInt(lastAuctionId(n) + FIRST_AUCTION_ID));
    put(row, p[1]!, itemName);
    put(row, p[2]!, description);
    put(row, p[3]!, BigInt(initialBid));
    put(row, p[4]!, BigInt(reserve));
    put(row, p[5]!, timeMs * 1000);
    put(row, p[6]!, expiresMs * 1000);
    put(row, p[7]!, BigInt(seller + FIRST_PERSON_ID));
    put(row, p[8]!, BigInt(category));
    put(row, p[9]!, this.extra(size, config.avgAuctionByteSize));
  }

  private bid(n: number, row: Row, p: readonly number[]): void {
    this.reseed(n);
    const config = this.config;
    const auction = this.below(config.hotAuctionRatio) > 0 ? Math.floor(lastAuctionId(n) / HOT_RATIO_2) * HOT_RATIO_2 : this.nextAuctionId(n);
    const bidder = this.below(config.hotBidderRatio) > 0 ? Math.floor(lastPersonId(n) / HOT_RATIO_2) * HOT_RATIO_2 + 1 : this.nextPersonId(n);
    const price = this.price();
    const channelNumber = this.below(CHANNELS);
    let channel: string;
    let url: string;
    if (this.below(config.hotChannelRatio) > 0) {
      const hot = this.below(HOT_CHANNELS.length);
      channel = HOT_CHANNELS[hot]!;
      url = HOT_URLS[hot]!;
    } else {
      channel = this.channelNames[channelNumber]!;
      url = this.channelUrls[channelNumber]!;
    }
    // Most bids go to the hot auction and come from the hot bidder of their stretch of events:
    // their ids repeat from one bid to the next, and so does the (immutable) bigint made for them.
    const auctionId = auction + FIRST_AUCTION_ID;
    if (auctionId !== this.auctionNumber) {
      this.auctionNumber = auctionId;
      this.auctionBigint = BigInt(auctionId);
    }
    const bidderId = bidder + FIRST_PERSON_ID;
    if (bidderId !== this.bidderNumber) {
      this.bidderNumber = bidderId;
      this.bidderBigint = BigInt(bidderId);
    }
    put(row, p[0]!, this.auctionBigint);
    put(row, p[1]!, this.bidderBigint);
    put(row, p[2]!, BigInt(price));
    put(row, p[3]!, channel);
    put(row, p[4]!, url);
    // eventTimeMs(n, config), with the delay between events computed once.
    const timeMs = config.baseTimeMs + Math.floor((n * this.interEventDelayUs) / 1000);
    if (timeMs !== this.timeMs) {
      this.timeMs = timeMs;
      this.timeValue = timeMs * 1000;
    }
    put(row, p[5]!, this.timeValue);
    if (p[6]! >= 0) row[p[6]!] = this.extra(32, config.avgBidByteSize);
  }

  /** A random recent person (among the last activePeople, or up to 10 not yet created). */
  private nextPersonId(n: number): number {
    const people = lastPersonId(n) + 1;
    const active = Math.min(people, this.config.activePeople);
    return people - active + this.below(active + PERSON_ID_LEAD);
  }

  /** A random in-flight auction (among the last inFlightAuctions, or up to 10 not yet created). */
  private nextAuctionId(n: number): number {
    const max = lastAuctionId(n);
    const min = max < this.config.inFlightAuctions ? 0 : max - this.config.inFlightAuctions;
    return min + this.below(max - min + 1 + AUCTION_ID_LEAD);
  }

  /** round(10^(6u) * 100) for uniform u in [0, 1): cents from 1.00 to 1,000,000.00 on a log scale. */
  private price(): number {
    return Math.round(Math.pow(10, this.uniform() * 6) * 100);
  }

  private digits4(): string {
    return String(this.below(10_000)).padStart(4, '0');
  }

  /** 3..max characters, lower-case letters with 1 in 13 a space. */
  private randomString(max: number): string {
    return this.slice(this.spaced, max);
  }

  private slice(pool: string, max: number): string {
    const length = MIN_STRING_LENGTH + this.below(max - MIN_STRING_LENGTH + 1);
    const at = this.below(POOL_SIZE);
    return pool.substring(at, at + length);
  }

  /** Letters padding an event of `size` bytes to `average` on average (+-20%). */
  private extra(size: number, average: number): string {
    if (size > average) return '';
    const averageExtra = average - size;
    const delta = Math.round(averageExtra * 0.2);
    if (delta === 0) return '';
    const length = averageExtra - delta + this.below(2 * delta + 1);
    const at = this.below(POOL_SIZE);
    return this.letters.substring(at, at + length);
  }

  /** POOL_SIZE + 1024 random characters: letters, with 1 in 13 the given delimiter code (-1: none). */
  private pool(delimiter: number): string {
    const codes = new Array<number>(POOL_SIZE + 1024);
    for (let i = 0; i < codes.length; i++) codes[i] = delimiter >= 0 && this.below(13) === 0 ? delimiter : 97 + this.below(26);
    let text = '';
    for (let i = 0; i < codes.length; i += 4096) text += String.fromCharCode(...codes.slice(i, i + 4096));
    return text;
  }

  private reseed(n: number): void {
    // splitmix32 of (seed, n) into sfc32's state, then a few rounds to spread it. The state is kept
    // as signed 32-bit values (small integers to V8, never a heap number): every use of it wraps
    // to 32 bits, so the numbers drawn are those of the unsigned state. The rounds run on locals.
    const low = n >>> 0;
    const high = Math.floor(n / TWO_32) >>> 0;
    let a = mix32(low ^ this.seedLow ^ 0x9e3779b9) | 0;
    let b = mix32(high ^ this.seedHigh ^ 0x85ebca6b) | 0;
    let c = mix32(a ^ 0xc2b2ae35 ^ high) | 0;
    let d = 1;
    for (let i = 0; i < 8; i++) {
      const t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11);
      c = (c + t) | 0;
    }
    this.a = a;
    this.b = b;
    this.c = c;
    this.d = d;
  }

  /**
   * sfc32: the next 32-bit random number, as a signed int32 (a small integer to V8: an unsigned
   * one above 2^31 would be a heap number each call that is not inlined); `>>> 0` makes it unsigned.
   */
  private next32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t;
  }

  /** Uniform integer in [0, bound). */
  private below(bound: number): number {
    return Math.floor(((this.next32() >>> 0) / TWO_32) * bound);
  }

  /** Uniform in [0, 1). */
  private uniform(): number {
    return (this.next32() >>> 0) / TWO_32;
  }
}

function put(row: Row, position: number, value: Row[number]): void {
  if (position >= 0) row[position] = value;
}

/** Java's Math.abs on an int: -2^31 stays -2^31. */
function javaAbs(x: number): number {
  return x === -2147483648 ? x : Math.abs(x);
}

function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  // Signed (its callers take it | 0): a small integer to V8, not a heap number.
  return x ^ (x >>> 16);
}

/** Java's Integer.reverse: the 32 bits of x in reverse order, as a signed 32-bit number. */
export function reverseBits32(x: number): number {
  let result = 0;
  for (let i = 0; i < 32; i++) {
    result = (result << 1) | (x & 1);
    x >>>= 1;
  }
  return result | 0;
}
