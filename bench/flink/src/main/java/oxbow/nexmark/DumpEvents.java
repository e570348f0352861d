package oxbow.nexmark;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;

/**
 * Prints Nexmark events as JSON lines, one array per event: its number, its kind (0 person, 1
 * auction, 2 bid) and its fields in canonical order, every value as a string and times as
 * milliseconds since 1970. check-generator.mjs compares them with oxbow's generator.
 *
 * <p>Usage: DumpEvents [--from N] [--count N] [--step N] [--seed S]. Needs no Flink: it compiles with
 * javac from this file and NexmarkGenerator.java alone.
 */
public final class DumpEvents {
  public static void main(String[] args) throws IOException {
    long from = 0;
    long count = 1000;
    long step = 1;
    NexmarkGenerator.Config config = new NexmarkGenerator.Config();
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--from": from = Long.parseLong(value); i++; break;
        case "--count": count = Long.parseLong(value); i++; break;
        case "--step": step = Long.parseLong(value); i++; break;
        case "--seed": config.seed = Long.parseLong(value); i++; break;
        default:
          System.err.println("usage: DumpEvents [--from N] [--count N] [--step N] [--seed S]");
          System.exit(2);
      }
    }
    NexmarkGenerator generator = new NexmarkGenerator(config);
    NexmarkGenerator.Event e = new NexmarkGenerator.Event();
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
    for (long i = 0; i < count; i++) {
      long n = from + i * step;
      generator.event(n, e);
      Object[] fields;
      switch (e.kind) {
        case NexmarkGenerator.PERSON:
          fields = new Object[] {e.personId, e.name, e.emailAddress, e.creditCard, e.city, e.state, e.dateTimeMs, e.extra};
          break;
        case NexmarkGenerator.AUCTION:
          fields = new Object[] {e.auctionId, e.itemName, e.description, e.initialBid, e.reserve, e.dateTimeMs, e.expiresMs, e.seller, e.category, e.extra};
          break;
        default:
          fields = new Object[] {e.auction, e.bidder, e.price, e.channel, e.url, e.dateTimeMs, e.extra};
      }
      StringBuilder line = new StringBuilder(256).append('[').append(quote(String.valueOf(n))).append(',').append(quote(String.valueOf(e.kind)));
      for (Object field : fields) line.append(',').append(quote(String.valueOf(field)));
      out.append(line).append("]\n");
    }
    out.flush();
  }

  private static String quote(String text) {
    StringBuilder quoted = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char ch = text.charAt(i);
      if (ch == '"' || ch == '\\') quoted.append('\\').append(ch);
      else if (ch < 0x20) quoted.append(String.format("\\u%04x", (int) ch));
      else quoted.append(ch);
    }
    return quoted.append('"').toString();
  }
}
