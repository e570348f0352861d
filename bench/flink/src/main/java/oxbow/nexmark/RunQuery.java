package oxbow.nexmark;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

/**
 * Runs one Nexmark query on Apache Flink in a local MiniCluster: the tables person, auction and bid
 * over {@link NexmarkTableFactory} (events 0..N-1 of each kind, watermarks 4 s behind the event
 * time), the query's statements (its blackhole sink and INSERT) from queries/qN.sql, streaming mode,
 * RocksDB state, mini-batch (2 s, 50,000 rows) and the distinct-aggregate split as the Nexmark suite
 * configures Flink, no checkpoints (a bounded job would wait for a final one before it finishes).
 *
 * <p>Prints JSON lines {"bench":"flink-nexmark-qN","metric","value","unit"}: events_per_second over
 * the job's net runtime (the JobManager's, from the job's submission to its end: scheduling and
 * deployment in, planning and the cluster's start out), events_per_second_wall over the INSERT from
 * its submission (planning and the local cluster's start in), events_per_cpu_second and
 * cpu_seconds (the process's CPU, every thread, JIT and GC too, from the job's submission to its
 * end), cpu_seconds_wall (from the INSERT's submission: planning and the cluster's start in),
 * peak_rss (VmHWM), seconds (the net runtime) and wall_seconds; events_per_second_running,
 * cpu_seconds_running and running_seconds from the first source reader's open (the tasks deployed,
 * their code generated) to the job's end.
 *
 * <p>Usage: RunQuery --query q4 --events 1000000 [--parallelism 1] [--sql FILE] [--seed S]
 * [--state-dir DIR] [--managed-memory-mib M] [--collect]. Without --sql the query is read from the
 * jar (bench/flink/queries/ packed as resources). --collect prints the query's final rows instead
 * of timing it (see {@link #collect}).
 */
public final class RunQuery {
  private static final String[] TABLES = {
    "person (id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, state STRING, date_time TIMESTAMP(3), extra STRING",
    "auction (id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT, date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra STRING",
    "bid (auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP(3), extra STRING",
  };

  public static void main(String[] args) throws Exception {
    String query = null;
    long events = -1;
    int parallelism = 1;
    String sqlFile = null;
    long seed = 0;
    String stateDir = null;
    int managedMemoryMib = 256;
    boolean collect = false;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--collect")) {
        collect = true;
        continue;
      }
      if (i + 1 >= args.length) usage("missing the value of " + args[i]);
      String value = args[++i];
      switch (args[i - 1]) {
        case "--query": query = value; break;
        case "--events": events = parseLong("--events", value); break;
        case "--parallelism": parallelism = (int) parseLong("--parallelism", value); break;
        case "--sql": sqlFile = value; break;
        case "--seed": seed = parseLong("--seed", value); break;
        case "--state-dir": stateDir = value; break;
        case "--managed-memory-mib": managedMemoryMib = (int) parseLong("--managed-memory-mib", value); break;
        default: usage("unknown flag " + args[i - 1]);
      }
    }
    if (query == null || !query.matches("q[0-9]+")) usage("--query must name a query (q0, q4, ...)");
    if (events <= 0) usage("--events must be a positive number of events");
    if (parallelism < 1) usage("--parallelism must be at least 1");
    String sql = sqlFile != null ? Files.readString(Path.of(sqlFile)) : resource("queries/" + query + ".sql");

    Path state = stateDir != null ? Path.of(stateDir) : Files.createTempDirectory("oxbow-flink-nexmark-");
    try {
      run(query, events, parallelism, sql, seed, state, managedMemoryMib, collect);
    } finally {
      if (stateDir == null) deleteTree(state);
    }
    // The MiniCluster's non-daemon threads would keep the JVM up.
    System.exit(0);
  }

  private static void run(String query, long events, int parallelism, String sql, long seed, Path state, int managedMemoryMib, boolean collect) throws Exception {
    Configuration conf = new Configuration();
    conf.setString("execution.runtime-mode", "streaming");
    conf.setString("parallelism.default", String.valueOf(parallelism));
    conf.setString("taskmanager.numberOfTaskSlots", String.valueOf(parallelism));
    conf.setString("state.backend.type", "rocksdb");
    conf.setString("state.backend.rocksdb.localdir", state.resolve("rocksdb").toString());
    conf.setString("io.tmp.dirs", state.resolve("tmp").toString());
    conf.setString("taskmanager.memory.managed.size", managedMemoryMib + "m");
    conf.setString("table.exec.mini-batch.enabled", "true");
    conf.setString("table.exec.mini-batch.allow-latency", "2s");
    conf.setString("table.exec.mini-batch.size", "50000");
    conf.setString("table.optimizer.distinct-agg.split.enabled", "true");
    conf.setString("rest.port", "0");
    TableEnvironment env = TableEnvironment.create(EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
    for (String table : TABLES) {
      String name = table.substring(0, table.indexOf(' '));
      env.executeSql("CREATE TABLE " + table + ", WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) WITH ("
          + "'connector' = '" + NexmarkTableFactory.IDENTIFIER + "', 'table' = '" + name + "', 'events.num' = '" + events + "', 'seed' = '" + seed + "')");
    }
    List<String> statements = statements(sql);
    if (statements.isEmpty() || !statements.get(statements.size() - 1).toUpperCase(Locale.ROOT).startsWith("INSERT")) {
      throw new IllegalArgumentException(query + ": the last statement must be the INSERT into its sink");
    }
    for (String statement : statements.subList(0, statements.size() - 1)) env.executeSql(statement);
    if (collect) {
      collect(env, statements.get(statements.size() - 1));
      return;
    }

    com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpuStart = os.getProcessCpuTime();
    long start = System.nanoTime();
    TableResult result = env.executeSql(statements.get(statements.size() - 1));
    // The job is submitted: from here on the CPU is the job's (and the JVM's JIT and GC).
    long cpuSubmitted = os.getProcessCpuTime();
    JobExecutionResult job = result.getJobClient().orElseThrow().getJobExecutionResult().get();
    long end = System.nanoTime();
    double wallSeconds = (end - start) / 1e9;
    long cpuEnd = os.getProcessCpuTime();
    double runningSeconds = (end - NexmarkRowSource.FIRST_OPEN_NANOS.get()) / 1e9;
    double runningCpuSeconds = (cpuEnd - NexmarkRowSource.FIRST_OPEN_CPU_NANOS.get()) / 1e9;
    // The readers may open before executeSql returns: the job's CPU starts at the earlier of the two.
    long firstOpenCpu = NexmarkRowSource.FIRST_OPEN_CPU_NANOS.get();
    double cpuSeconds = (cpuEnd - (firstOpenCpu == 0 ? cpuSubmitted : Math.min(cpuSubmitted, firstOpenCpu))) / 1e9;
    double cpuSecondsWall = (cpuEnd - cpuStart) / 1e9;
    double seconds = job.getNetRuntime() / 1e3;
    String bench = "flink-nexmark-" + query;
    report(bench, "events_per_second", events / seconds, "events/s");
    report(bench, "events_per_second_wall", events / wallSeconds, "events/s");
    report(bench, "events_per_cpu_second", events / cpuSeconds, "events/s per core");
    report(bench, "cpu_seconds", cpuSeconds, "s");
    report(bench, "cpu_seconds_wall", cpuSecondsWall, "s");
    report(bench, "events_per_second_running", events / runningSeconds, "events/s");
    report(bench, "cpu_seconds_running", runningCpuSeconds, "s");
    report(bench, "peak_rss", peakRssKib() / 1024.0, "MiB");
    report(bench, "seconds", seconds, "s");
    report(bench, "wall_seconds", wallSeconds, "s");
    report(bench, "running_seconds", runningSeconds, "s");
  }

  /**
   * Runs the INSERT's query with its result collected instead of sunk, applies its changes (insert,
   * update, delete) to a multiset and prints the final rows as JSON arrays of strings: integers as
   * they are, decimals in full, timestamps as milliseconds since 1970. check-results.mjs compares
   * them with oxbow's view.
   */
  private static void collect(TableEnvironment env, String insert) throws Exception {
    String select = insert.replaceFirst("(?is)^INSERT\\s+INTO\\s+\\S+\\s+", "");
    Map<String, Integer> rows = new HashMap<>();
    try (CloseableIterator<Row> result = env.sqlQuery(select).execute().collect()) {
      while (result.hasNext()) {
        Row row = result.next();
        StringBuilder line = new StringBuilder("[");
        for (int i = 0; i < row.getArity(); i++) {
          if (i > 0) line.append(',');
          Object value = row.getField(i);
          if (value == null) {
            line.append("null");
            continue;
          }
          String text;
          if (value instanceof LocalDateTime) text = String.valueOf(((LocalDateTime) value).toInstant(ZoneOffset.UTC).toEpochMilli());
          else if (value instanceof BigDecimal) text = ((BigDecimal) value).toPlainString();
          else text = value.toString();
          line.append('"').append(text.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        }
        String key = line.append(']').toString();
        int change = row.getKind() == RowKind.INSERT || row.getKind() == RowKind.UPDATE_AFTER ? 1 : -1;
        rows.merge(key, change, Integer::sum);
      }
    }
    StringBuilder out = new StringBuilder();
    for (Map.Entry<String, Integer> entry : rows.entrySet()) {
      if (entry.getValue() < 0) throw new IllegalStateException("more retractions than rows of " + entry.getKey());
      for (int i = 0; i < entry.getValue(); i++) out.append(entry.getKey()).append('\n');
    }
    System.out.print(out);
    System.out.flush();
  }

  /** The statements of a SQL file: split at semicolons outside quotes, `--` comments dropped. */
  static List<String> statements(String sql) {
    List<String> statements = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    boolean quoted = false;
    for (int i = 0; i < sql.length(); i++) {
      char ch = sql.charAt(i);
      if (!quoted && ch == '-' && i + 1 < sql.length() && sql.charAt(i + 1) == '-') {
        while (i < sql.length() && sql.charAt(i) != '\n') i++;
        current.append('\n');
        continue;
      }
      if (ch == '\'') quoted = !quoted;
      if (!quoted && ch == ';') {
        if (!current.toString().isBlank()) statements.add(current.toString().trim());
        current.setLength(0);
      } else {
        current.append(ch);
      }
    }
    if (!current.toString().isBlank()) statements.add(current.toString().trim());
    return statements;
  }

  private static long peakRssKib() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
    return 0;
  }

  private static void report(String bench, String metric, double value, String unit) {
    System.out.println("{\"bench\":\"" + bench + "\",\"metric\":\"" + metric + "\",\"value\":" + (Math.abs(value) >= 10 ? Math.round(value * 10) / 10.0 : Math.round(value * 1000) / 1000.0) + ",\"unit\":\"" + unit + "\"}");
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = RunQuery.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) throw new IllegalArgumentException("no query " + name + " in the jar");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static long parseLong(String flag, String value) {
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      usage(flag + " must be an integer, not '" + value + "'");
      return 0;
    }
  }

  private static void usage(String message) {
    System.err.println("flink-nexmark: " + message);
    System.err.println("usage: RunQuery --query qN --events N [--parallelism P] [--sql FILE] [--seed S] [--state-dir DIR] [--managed-memory-mib M] [--collect]");
    System.exit(2);
  }

  /** Deletes the state directory; what the cluster's own cleanup removes meanwhile is skipped. */
  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) return;
    Files.walkFileTree(root, new SimpleFileVisitor<Path>() {
      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
        Files.deleteIfExists(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFileFailed(Path file, IOException error) {
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult postVisitDirectory(Path directory, IOException error) throws IOException {
        try {
          Files.deleteIfExists(directory);
        } catch (DirectoryNotEmptyException raced) {
          // The cluster wrote into it meanwhile; the temporary directory is left to the OS.
        }
        return FileVisitResult.CONTINUE;
      }
    });
  }
}
