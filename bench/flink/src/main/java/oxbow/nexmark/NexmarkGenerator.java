package oxbow.nexmark;

/**
 * The Nexmark event generator (an online auction: people, auctions, bids), the same events as
 * oxbow's executor/connectors/generators/nexmark-generator.ts for the same seed and event number: the
 * event kind by {@code n % 50}, the event time from the event rate, ids counted from 1000, hot
 * sellers, auctions and bidders, log-scale prices, hot channels with fixed URLs, {@code extra}
 * padding to the average event sizes.
 *
 * <p>Pure: every event n is a function of (seed, n) alone; its random numbers come from an sfc32
 * generator seeded with (seed, n), so a reader may produce any range of events in any order. Every
 * random draw is taken in the same order and with the same double arithmetic as the TypeScript
 * generator (StrictMath.pow is fdlibm's pow, as V8's Math.pow; Math.round rounds halves up, as
 * JavaScript's), so both produce the same rows.
 *
 * <p>Not thread-safe: one instance per reader.
 */
public final class NexmarkGenerator {
  public static final int PERSON = 0;
  public static final int AUCTION = 1;
  public static final int BID = 2;

  public static final long BASE_TIME_MS = 1_436_918_400_000L; // 2015-07-15 00:00:00 UTC

  private static final int PROPORTION_DENOMINATOR = 50;
  private static final int PERSON_PROPORTION = 1;
  private static final int AUCTION_PROPORTION = 3;
  private static final int BID_PROPORTION = PROPORTION_DENOMINATOR - PERSON_PROPORTION - AUCTION_PROPORTION;
  private static final long FIRST_PERSON_ID = 1000;
  private static final long FIRST_AUCTION_ID = 1000;
  private static final long FIRST_CATEGORY_ID = 10;
  private static final int NUM_CATEGORIES = 5;
  private static final int PERSON_ID_LEAD = 10;
  private static final int AUCTION_ID_LEAD = 10;
  private static final long HOT_RATIO_2 = 100;
  private static final int CHANNELS = 10_000;
  private static final int MIN_STRING_LENGTH = 3;
  private static final int POOL_SIZE = 1 << 16;
  private static final double TWO_32 = 4294967296.0;

  private static final String[] FIRST_NAMES = {"peter", "paul", "luke", "john", "saul", "vicky", "kate", "julie", "sarah", "deiter", "walter"};
  private static final String[] LAST_NAMES = {"shultz", "abrams", "spencer", "white", "bartels", "walton", "smith", "jones", "noris"};
  private static final String[] CITIES = {"phoenix", "los angeles", "san francisco", "boise", "portland", "bend", "redmond", "seattle", "kent", "cheyenne"};
  private static final String[] STATES = {"az", "ca", "id", "or", "wa", "wy"};
  private static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
  private static final String[] HOT_URLS = {
    "https://www.nexmark.com/vzbh/gkz_/yha/item.htm?query=1",
    "https://www.nexmark.com/_mks/ppeq/sic/item.htm?query=1",
    "https://www.nexmark.com/pd_/a_y/p_f_/item.htm?query=1",
    "https://www.nexmark.com/rxa/bnn/fl_/item.htm?query=1",
  };

  /** Generator parameters, with the reference generator's defaults. */
  public static final class Config implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    public long seed = 0;
    public double firstEventRate = 10_000;
    public long baseTimeMs = BASE_TIME_MS;
    public int activePeople = 1000;
    public int inFlightAuctions = 100;
    public int hotSellerRatio = 4;
    public int hotAuctionRatio = 2;
    public int hotBidderRatio = 4;
    public int hotChannelRatio = 2;
    public int avgPersonByteSize = 200;
    public int avgAuctionByteSize = 500;
    public int avgBidByteSize = 100;
  }

  /** One event's fields; only those of its kind are set. Reused from event to event. */
  public static final class Event {
    public int kind;
    public long dateTimeMs;
    public String extra;
    // Person
    public long personId;
    public String name;
    public String emailAddress;
    public String creditCard;
    public String city;
    public String state;
    // Auction
    public long auctionId;
    public String itemName;
    public String description;
    public long initialBid;
    public long reserve;
    public long expiresMs;
    public long seller;
    public long category;
    // Bid
    public long auction;
    public long bidder;
    public long price;
    public String channel;
    public String url;
  }

  private final Config config;
  private final int seedLow;
  private final int seedHigh;
  private final long eventsForAuctions;
  // sfc32's state, reseeded for each event.
  private int a;
  private int b;
  private int c;
  private int d;
  private final String letters;
  private final String spaced;
  private final String[] channelNames = new String[CHANNELS];
  private final String[] channelUrls = new String[CHANNELS];

  public NexmarkGenerator(Config config) {
    this.config = config;
    this.seedLow = (int) config.seed;
    this.seedHigh = (int) Math.floorDiv(config.seed, 1L << 32);
    this.eventsForAuctions = (long) Math.floor((double) config.inFlightAuctions * PROPORTION_DENOMINATOR / AUCTION_PROPORTION);
    // Pools and channel URLs, from a generator seeded with the seed alone (event "-1").
    reseed(-1);
    this.letters = pool(-1);
    this.spaced = pool(32);
    String underscored = pool(95);
    for (int i = 0; i < CHANNELS; i++) {
      channelNames[i] = "channel-" + i;
      String url = "https://www.nexmark.com/" + slice(underscored, 5) + "/" + slice(underscored, 5) + "/" + slice(underscored, 5) + "/item.htm?query=1";
      if (below(10) > 0) url += "&channel_id=" + Math.abs(Integer.reverse(i));
      channelUrls[i] = url;
    }
  }

  public NexmarkGenerator() {
    this(new Config());
  }

  /** Event n's kind: PERSON when n % 50 == 0, AUCTION when 1..3, BID otherwise. */
  public static int eventKind(long n) {
    long offset = n % PROPORTION_DENOMINATOR;
    return offset < PERSON_PROPORTION ? PERSON : offset < PERSON_PROPORTION + AUCTION_PROPORTION ? AUCTION : BID;
  }

  /** How many events of {@code kind} there are among events 0..events-1. */
  public static long countOf(int kind, long events) {
    long epochs = events / PROPORTION_DENOMINATOR;
    long rest = events % PROPORTION_DENOMINATOR;
    switch (kind) {
      case PERSON:
        return epochs * PERSON_PROPORTION + Math.min(rest, PERSON_PROPORTION);
      case AUCTION:
        return epochs * AUCTION_PROPORTION + Math.max(0, Math.min(rest, PERSON_PROPORTION + AUCTION_PROPORTION) - PERSON_PROPORTION);
      default:
        return epochs * BID_PROPORTION + Math.max(0, rest - PERSON_PROPORTION - AUCTION_PROPORTION);
    }
  }

  /** The event number of the k-th event (from 0) of {@code kind}. */
  public static long eventNumberOf(int kind, long k) {
    switch (kind) {
      case PERSON:
        return (k / PERSON_PROPORTION) * PROPORTION_DENOMINATOR + k % PERSON_PROPORTION;
      case AUCTION:
        return (k / AUCTION_PROPORTION) * PROPORTION_DENOMINATOR + PERSON_PROPORTION + k % AUCTION_PROPORTION;
      default:
        return (k / BID_PROPORTION) * PROPORTION_DENOMINATOR + PERSON_PROPORTION + AUCTION_PROPORTION + k % BID_PROPORTION;
    }
  }

  /** Event n's time in milliseconds since 1970: base + floor(n * (1e6 / rate) / 1000). */
  public long eventTimeMs(long n) {
    return config.baseTimeMs + (long) Math.floor((n * (1e6 / config.firstEventRate)) / 1000);
  }

  /** The number of people created by events 0..n (the id of the last person, less 1000). */
  static long lastPersonId(long n) {
    long epoch = n / PROPORTION_DENOMINATOR;
    long offset = n % PROPORTION_DENOMINATOR;
    if (PERSON_PROPORTION <= offset) offset = PERSON_PROPORTION - 1;
    return epoch * PERSON_PROPORTION + offset;
  }

  /** The id (less 1000) of the last auction created by events 0..n. */
  static long lastAuctionId(long n) {
    long epoch = n / PROPORTION_DENOMINATOR;
    long offset = n % PROPORTION_DENOMINATOR;
    if (offset < PERSON_PROPORTION) {
      epoch--;
      offset = AUCTION_PROPORTION - 1;
    } else if (PERSON_PROPORTION + AUCTION_PROPORTION <= offset) {
      offset = AUCTION_PROPORTION - 1;
    } else {
      offset -= PERSON_PROPORTION;
    }
    return epoch * AUCTION_PROPORTION + offset;
  }

  /** Fills {@code out} with event n (of whichever kind it is). */
  public void event(long n, Event out) {
    int kind = eventKind(n);
    out.kind = kind;
    if (kind == PERSON) person(n, out);
    else if (kind == AUCTION) auction(n, out);
    else bid(n, out);
  }

  private void person(long n, Event e) {
    reseed(n);
    long timeMs = eventTimeMs(n);
    String name = FIRST_NAMES[(int) below(FIRST_NAMES.length)] + " " + LAST_NAMES[(int) below(LAST_NAMES.length)];
    String email = randomString(7) + "@" + randomString(5) + ".com";
    String card = digits4() + " " + digits4() + " " + digits4() + " " + digits4();
    String city = CITIES[(int) below(CITIES.length)];
    String state = STATES[(int) below(STATES.length)];
    int size = 8 + name.length() + email.length() + card.length() + city.length() + state.length() + 8;
    e.personId = lastPersonId(n) + FIRST_PERSON_ID;
    e.name = name;
    e.emailAddress = email;
    e.creditCard = card;
    e.city = city;
    e.state = state;
    e.dateTimeMs = timeMs;
    e.extra = extra(size, config.avgPersonByteSize);
  }

  private void auction(long n, Event e) {
    reseed(n);
    long timeMs = eventTimeMs(n);
    long initialBid = price();
    long seller = below(config.hotSellerRatio) > 0 ? (lastPersonId(n) / HOT_RATIO_2) * HOT_RATIO_2 : nextPersonId(n);
    String itemName = randomString(20);
    String description = randomString(100);
    long reserve = initialBid + price();
    long horizonMs = eventTimeMs(n + eventsForAuctions) - timeMs;
    long expiresMs = timeMs + 1 + below(Math.max(horizonMs * 2, 1));
    long category = FIRST_CATEGORY_ID + below(NUM_CATEGORIES);
    int size = 8 + itemName.length() + description.length() + 8 + 8 + 8 + 8 + 8 + 8;
    e.auctionId = lastAuctionId(n) + FIRST_AUCTION_ID;
    e.itemName = itemName;
    e.description = description;
    e.initialBid = initialBid;
    e.reserve = reserve;
    e.dateTimeMs = timeMs;
    e.expiresMs = expiresMs;
    e.seller = seller + FIRST_PERSON_ID;
    e.category = category;
    e.extra = extra(size, config.avgAuctionByteSize);
  }

  private void bid(long n, Event e) {
    reseed(n);
    long auction = below(config.hotAuctionRatio) > 0 ? (lastAuctionId(n) / HOT_RATIO_2) * HOT_RATIO_2 : nextAuctionId(n);
    long bidder = below(config.hotBidderRatio) > 0 ? (lastPersonId(n) / HOT_RATIO_2) * HOT_RATIO_2 + 1 : nextPersonId(n);
    long price = price();
    int channelNumber = (int) below(CHANNELS);
    if (below(config.hotChannelRatio) > 0) {
      int hot = (int) below(HOT_CHANNELS.length);
      e.channel = HOT_CHANNELS[hot];
      e.url = HOT_URLS[hot];
    } else {
      e.channel = channelNames[channelNumber];
      e.url = channelUrls[channelNumber];
    }
    e.auction = auction + FIRST_AUCTION_ID;
    e.bidder = bidder + FIRST_PERSON_ID;
    e.price = price;
    e.dateTimeMs = eventTimeMs(n);
    e.extra = extra(32, config.avgBidByteSize);
  }

  /** A random recent person (among the last activePeople, or up to 10 not yet created). */
  private long nextPersonId(long n) {
    long people = lastPersonId(n) + 1;
    long active = Math.min(people, config.activePeople);
    return people - active + below(active + PERSON_ID_LEAD);
  }

  /** A random in-flight auction (among the last inFlightAuctions, or up to 10 not yet created). */
  private long nextAuctionId(long n) {
    long max = lastAuctionId(n);
    long min = max < config.inFlightAuctions ? 0 : max - config.inFlightAuctions;
    return min + below(max - min + 1 + AUCTION_ID_LEAD);
  }

  /** round(10^(6u) * 100) for uniform u in [0, 1): cents from 1.00 to 1,000,000.00 on a log scale. */
  private long price() {
    return Math.round(StrictMath.pow(10, uniform() * 6) * 100);
  }

  private String digits4() {
    String digits = Long.toString(below(10_000));
    return "0000".substring(digits.length()) + digits;
  }

  /** 3..max characters, lower-case letters with 1 in 13 a space. */
  private String randomString(int max) {
    return slice(spaced, max);
  }

  private String slice(String pool, int max) {
    int length = MIN_STRING_LENGTH + (int) below(max - MIN_STRING_LENGTH + 1);
    int at = (int) below(POOL_SIZE);
    return pool.substring(at, Math.min(at + length, pool.length()));
  }

  /** Letters padding an event of {@code size} bytes to {@code average} on average (+-20%). */
  private String extra(int size, int average) {
    if (size > average) return "";
    int averageExtra = average - size;
    long delta = Math.round(averageExtra * 0.2);
    if (delta == 0) return "";
    int length = (int) (averageExtra - delta + below(2 * delta + 1));
    int at = (int) below(POOL_SIZE);
    return letters.substring(at, Math.min(at + length, letters.length()));
  }

  /** POOL_SIZE + 1024 random characters: letters, with 1 in 13 the given delimiter (-1: none). */
  private String pool(int delimiter) {
    char[] codes = new char[POOL_SIZE + 1024];
    for (int i = 0; i < codes.length; i++) {
      codes[i] = (char) (delimiter >= 0 && below(13) == 0 ? delimiter : 97 + below(26));
    }
    return new String(codes);
  }

  private void reseed(long n) {
    // splitmix32 of (seed, n) into sfc32's state, then a few rounds to spread it.
    int low = (int) n;
    int high = (int) Math.floorDiv(n, 1L << 32);
    a = mix32(low ^ seedLow ^ 0x9e3779b9);
    b = mix32(high ^ seedHigh ^ 0x85ebca6b);
    c = mix32(a ^ 0xc2b2ae35 ^ high);
    d = 1;
    for (int i = 0; i < 8; i++) next32();
  }

  /** sfc32: the next 32 random bits. */
  private int next32() {
    int t = a + b + d;
    d = d + 1;
    a = b ^ (b >>> 9);
    b = c + (c << 3);
    c = (c << 21) | (c >>> 11);
    c = c + t;
    return t;
  }

  /** Uniform integer in [0, bound). */
  private long below(long bound) {
    return (long) Math.floor(((next32() & 0xffffffffL) / TWO_32) * bound);
  }

  /** Uniform in [0, 1). */
  private double uniform() {
    return (next32() & 0xffffffffL) / TWO_32;
  }

  private static int mix32(int x) {
    x = (x ^ (x >>> 16)) * 0x85ebca6b;
    x = (x ^ (x >>> 13)) * 0xc2b2ae35;
    return x ^ (x >>> 16);
  }
}
