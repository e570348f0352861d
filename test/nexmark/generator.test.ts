// The Nexmark generator against the specification (the reference generator's formulas, as
// nexmark-generator.ts states them): expected values are recomputed here from those formulas,
// never taken from the generator's own helpers.
import { describe, expect, it } from 'vitest';
import type { Row } from '../../sql/value.js';
import { NEXMARK_COLUMNS, NexmarkGenerator, canonicalShape, eventKind, type NexmarkTableType } from '../../executor/connectors/generators/nexmark-generator.js';

const N = 50_000;
const BASE_US = Date.UTC(2015, 6, 15) * 1000;

function rowsOf(generator: NexmarkGenerator, table: NexmarkTableType, start: number, step: number, end: number, chunk = 1000): Row[] {
  const out: Row[] = [];
  let next = start;
  while (next < end) next = generator.fill(out, table, next, step, end, chunk).next;
  return out;
}

function column(table: NexmarkTableType, name: string): number {
  return NEXMARK_COLUMNS[table].findIndex((c) => c.name === name);
}

const generator = new NexmarkGenerator();
const bids = rowsOf(generator, 'Bid', 0, 1, N);
const auctions = rowsOf(generator, 'Auction', 0, 1, N);
const people = rowsOf(generator, 'Person', 0, 1, N);

describe('nexmark generator', () => {
  it('deals event kinds by n % 50: 1 person, 3 auctions, 46 bids', () => {
    expect(people.length).toBe(N / 50);
    expect(auctions.length).toBe((N / 50) * 3);
    expect(bids.length).toBe((N / 50) * 46);
    for (const n of [0, 1, 3, 4, 49, 50, 51, 99]) expect(eventKind(n)).toBe(n % 50 === 0 ? 0 : n % 50 <= 3 ? 1 : 2);
  });

  it('is deterministic for a seed, in any chunking and split, and differs across seeds', () => {
    const again = rowsOf(new NexmarkGenerator({ seed: 0 }), 'Bid', 0, 1, N, 777);
    expect(again).toEqual(bids);
    // Three splits (events i, i+3, ...) together are the same events.
    const split = [0, 1, 2].flatMap((i) => rowsOf(new NexmarkGenerator(), 'Bid', i, 3, N));
    const key = (row: Row): string => row.map(String).join('|');
    expect(split.map(key).sort()).toEqual(bids.map(key).sort());
    const other = rowsOf(new NexmarkGenerator({ seed: 7 }), 'Bid', 0, 1, 5000);
    expect(other).not.toEqual(bids.slice(0, other.length));
    // One event alone equals the same event in a run.
    expect(new NexmarkGenerator().event(1234).row).toEqual(bids[rowsOf(generator, 'Bid', 0, 1, 1234).length]);
  });

  it('times events at base + n / 10 ms (10,000 events/s) with millisecond precision', () => {
    const dateTime = column('Bid', 'date_time');
    const expected: number[] = [];
    for (let n = 0; n < N; n++) if (n % 50 >= 4) expected.push(BASE_US + Math.floor(n / 10) * 1000);
    expect(bids.map((row) => row[dateTime])).toEqual(expected);
    const fast = new NexmarkGenerator({ firstEventRate: 1000 }).event(4).row;
    expect(fast[dateTime]).toBe(BASE_US + 4000);
  });

  it('numbers people and auctions from 1000 in event order', () => {
    const personIds = people.map((row) => row[column('Person', 'id')]);
    expect(personIds).toEqual(Array.from({ length: N / 50 }, (_, i) => BigInt(1000 + i)));
    const auctionIds = auctions.map((row) => row[column('Auction', 'id')]);
    expect(auctionIds).toEqual(Array.from({ length: (N / 50) * 3 }, (_, i) => BigInt(1000 + i)));
  });

  it('bids go half to hot auctions, 3/4 from hot bidders, within the id ranges', () => {
    let index = 0;
    let hotAuctions = 0;
    let hotBidders = 0;
    const outside: string[] = [];
    for (let n = 0; n < N; n++) {
      if (n % 50 < 4) continue;
      const row = bids[index++]!;
      const auction = Number(row[0]) - 1000;
      const bidder = Number(row[1]) - 1000;
      const lastAuction = Math.floor(n / 50) * 3 + 2; // the 3rd auction of this group of 50
      const lastPerson = Math.floor(n / 50);
      if (auction === Math.floor(lastAuction / 100) * 100) hotAuctions++;
      else if (auction < Math.max(0, lastAuction - 100) || auction > lastAuction + 10) outside.push(`event ${n}: auction ${auction}`);
      if (bidder === Math.floor(lastPerson / 100) * 100 + 1) hotBidders++;
      else if (bidder < Math.max(0, lastPerson + 1 - 1000) || bidder > lastPerson + 10) outside.push(`event ${n}: bidder ${bidder}`);
    }
    expect(outside).toEqual([]);
    // The hot shares are 1/2 and 3/4 plus the random draws that land on the hot id.
    expect(hotAuctions / bids.length).toBeGreaterThan(0.49);
    expect(hotAuctions / bids.length).toBeLessThan(0.52);
    expect(hotBidders / bids.length).toBeGreaterThan(0.74);
    expect(hotBidders / bids.length).toBeLessThan(0.77);
  });

  it('prices are round(10^(6u) * 100): 100 .. 1e8 cents, log-uniform', () => {
    const prices = bids.map((row) => Number(row[column('Bid', 'price')]));
    expect(Math.min(...prices)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...prices)).toBeLessThanOrEqual(100_000_000);
    // P(price < 100 * 10^(6q)) = q for each quantile q.
    for (const q of [0.1, 0.25, 0.5, 0.75, 0.9]) {
      const share = prices.filter((price) => price < 100 * 10 ** (6 * q)).length / prices.length;
      expect(Math.abs(share - q)).toBeLessThan(0.01);
    }
  });

  it('channels: half hot with their fixed URLs, the rest channel-i with channel_id = |reverse(i)|', () => {
    const channel = column('Bid', 'channel');
    const url = column('Bid', 'url');
    const hot = new Map([
      ['Google', 'https://www.nexmark.com/vzbh/gkz_/yha/item.htm?query=1'],
      ['Facebook', 'https://www.nexmark.com/_mks/ppeq/sic/item.htm?query=1'],
      ['Baidu', 'https://www.nexmark.com/pd_/a_y/p_f_/item.htm?query=1'],
      ['Apple', 'https://www.nexmark.com/rxa/bnn/fl_/item.htm?query=1'],
    ]);
    let hotCount = 0;
    let withId = 0;
    const wrong: string[] = [];
    for (const row of bids) {
      const name = row[channel] as string;
      if (hot.has(name)) {
        hotCount++;
        if (row[url] !== hot.get(name)) wrong.push(`${name}: ${String(row[url])}`);
        continue;
      }
      const match = /^channel-(\d+)$/.exec(name);
      if (match === null || Number(match[1]) >= 10_000) {
        wrong.push(name);
        continue;
      }
      const i = Number(match[1]);
      const idMatch = /&channel_id=(-?\d+)$/.exec(row[url] as string);
      if (idMatch !== null) {
        withId++;
        // Java's Math.abs(Integer.reverse(i)), recomputed from the bit string.
        const reversed = parseInt(i.toString(2).padStart(32, '0').split('').reverse().join(''), 2) | 0;
        if (Number(idMatch[1]) !== (reversed === -2147483648 ? reversed : Math.abs(reversed))) wrong.push(`${name}: ${String(row[url])}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(Math.abs(hotCount / bids.length - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(withId / (bids.length - hotCount) - 0.9)).toBeLessThan(0.02);
    // The reference dataset's channel-7568 carries channel_id=163053568.
    expect(((): number => Math.abs(parseInt((7568).toString(2).padStart(32, '0').split('').reverse().join(''), 2) | 0))()).toBe(163053568);
  });

  it('auctions: hot sellers 3/4, categories 10..14, reserve above the initial bid, expiry within twice the time of 100 auctions', () => {
    const a = (name: string): number => column('Auction', name);
    let index = 0;
    let hotSellers = 0;
    const wrong: string[] = [];
    for (let n = 0; n < N; n++) {
      if (n % 50 === 0 || n % 50 > 3) continue;
      const row = auctions[index++]!;
      const lastPerson = Math.floor(n / 50);
      const seller = Number(row[a('seller')]) - 1000;
      if (seller === Math.floor(lastPerson / 100) * 100) hotSellers++;
      else if (seller > lastPerson + 10) wrong.push(`event ${n}: seller ${seller}`);
      const category = Number(row[a('category')]);
      if (category < 10 || category > 14) wrong.push(`event ${n}: category ${category}`);
      if (!((row[a('reserve')] as bigint) > (row[a('initial_bid')] as bigint))) wrong.push(`event ${n}: reserve`);
      const time = row[a('date_time')] as number;
      const expires = row[a('expires')] as number;
      // 100 auctions take 100 * 50 / 3 events at 0.1 ms each.
      const horizonMs = Math.floor((n + Math.floor(5000 / 3)) / 10) - Math.floor(n / 10);
      if (!(expires > time && expires - time <= 2 * horizonMs * 1000)) wrong.push(`event ${n}: expires ${expires - time}`);
    }
    expect(wrong).toEqual([]);
    expect(Math.abs(hotSellers / auctions.length - 0.75)).toBeLessThan(0.015);
  });

  it('people: names, emails, cards, cities and states from the spec lists', () => {
    const p = (name: string): number => column('Person', name);
    const first = ['peter', 'paul', 'luke', 'john', 'saul', 'vicky', 'kate', 'julie', 'sarah', 'deiter', 'walter'];
    const last = ['shultz', 'abrams', 'spencer', 'white', 'bartels', 'walton', 'smith', 'jones', 'noris'];
    const cities = ['phoenix', 'los angeles', 'san francisco', 'boise', 'portland', 'bend', 'redmond', 'seattle', 'kent', 'cheyenne'];
    const states = ['az', 'ca', 'id', 'or', 'wa', 'wy'];
    const seenStates = new Set<string>();
    for (const row of people) {
      const [f, l] = (row[p('name')] as string).split(' ');
      expect(first).toContain(f);
      expect(last).toContain(l);
      expect(row[p('email_address')]).toMatch(/^[a-z ]{3,7}@[a-z ]{3,5}\.com$/);
      expect(row[p('credit_card')]).toMatch(/^\d{4} \d{4} \d{4} \d{4}$/);
      expect(cities).toContain(row[p('city')]);
      expect(states).toContain(row[p('state')]);
      seenStates.add(row[p('state')] as string);
    }
    expect(seenStates.size).toBe(6);
  });

  it('pads rows to the average sizes: person ~200, auction ~500, bid ~100 bytes (as the reference counts them)', () => {
    const size = (row: Row): number => row.reduce<number>((sum, value) => sum + (typeof value === 'string' ? value.length : 8), 0);
    const average = (rows: Row[], measure: (row: Row) => number): number => rows.reduce((sum, row) => sum + measure(row), 0) / rows.length;
    expect(Math.abs(average(people, size) - 200) / 200).toBeLessThan(0.1);
    expect(Math.abs(average(auctions, size) - 500) / 500).toBeLessThan(0.1);
    // The reference generator counts a bid as 32 fixed bytes plus its extra (channel and URL not counted).
    expect(Math.abs(average(bids, (row) => 32 + (row[6] as string).length) - 100) / 100).toBeLessThan(0.05);
  });

  it('places fields by a row shape without changing them', () => {
    const shape = { width: 4, positions: [2, -1, 0, -1, -1, 1, -1] };
    const shaped: Row[] = [];
    generator.fill(shaped, 'Bid', 0, 1, 200, 1000, shape);
    const canonical: Row[] = [];
    generator.fill(canonical, 'Bid', 0, 1, 200, 1000, canonicalShape('Bid'));
    expect(shaped.map((row) => [row[2], row[0], row[1], row[3]])).toEqual(canonical.map((row) => [row[0], row[2], row[5], null]));
  });
});
