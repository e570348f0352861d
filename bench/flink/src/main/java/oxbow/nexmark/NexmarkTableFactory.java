package oxbow.nexmark;

import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;

/**
 * The connector {@code 'oxbow-nexmark'}: one table of Nexmark events of one kind ({@code 'table'} =
 * person, auction or bid) among events 0..{@code 'events.num'}-1, as oxbow's {@code connector =
 * 'nexmark'} sources produce them. The declared columns are any of the kind's columns
 * ({@link NexmarkRowSource#COLUMNS}), in any order, with their types (BIGINT, STRING,
 * TIMESTAMP(3)).
 */
public final class NexmarkTableFactory implements DynamicTableSourceFactory {
  public static final String IDENTIFIER = "oxbow-nexmark";

  public static final ConfigOption<String> TABLE = ConfigOptions.key("table").stringType().noDefaultValue()
      .withDescription("person, auction or bid");
  public static final ConfigOption<Long> EVENTS = ConfigOptions.key("events.num").longType().noDefaultValue()
      .withDescription("Nexmark events of all kinds; the table holds those of its kind among them");
  public static final ConfigOption<Long> SEED = ConfigOptions.key("seed").longType().defaultValue(0L);
  public static final ConfigOption<Double> RATE = ConfigOptions.key("event.rate").doubleType().defaultValue(10_000.0)
      .withDescription("events per second of event time");

  @Override
  public String factoryIdentifier() {
    return IDENTIFIER;
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    Set<ConfigOption<?>> options = new HashSet<>();
    options.add(TABLE);
    options.add(EVENTS);
    return options;
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    Set<ConfigOption<?>> options = new HashSet<>();
    options.add(SEED);
    options.add(RATE);
    return options;
  }

  @Override
  public DynamicTableSource createDynamicTableSource(Context context) {
    FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
    helper.validate();
    String table = helper.getOptions().get(TABLE).toLowerCase(Locale.ROOT);
    int kind;
    switch (table) {
      case "person": kind = NexmarkGenerator.PERSON; break;
      case "auction": kind = NexmarkGenerator.AUCTION; break;
      case "bid": kind = NexmarkGenerator.BID; break;
      default: throw new ValidationException("'table' must be person, auction or bid, not '" + table + "'");
    }
    long events = helper.getOptions().get(EVENTS);
    if (events < 0) throw new ValidationException("'events.num' must not be negative, not " + events);
    NexmarkGenerator.Config config = new NexmarkGenerator.Config();
    config.seed = helper.getOptions().get(SEED);
    config.firstEventRate = helper.getOptions().get(RATE);
    if (!(config.firstEventRate > 0)) throw new ValidationException("'event.rate' must be positive");

    DataType rowDataType = context.getPhysicalRowDataType();
    RowType rowType = (RowType) rowDataType.getLogicalType();
    List<String> names = rowType.getFieldNames();
    List<String> canonical = List.of(NexmarkRowSource.COLUMNS[kind]);
    int[] fields = new int[names.size()];
    for (int i = 0; i < names.size(); i++) {
      int at = canonical.indexOf(names.get(i));
      if (at < 0) throw new ValidationException("Nexmark table " + table + " has no column '" + names.get(i) + "'; its columns are " + canonical);
      LogicalTypeRoot expected = NexmarkRowSource.typeOf(kind, at);
      LogicalTypeRoot declared = rowType.getTypeAt(i).getTypeRoot();
      if (declared != expected) throw new ValidationException("column '" + names.get(i) + "' of Nexmark table " + table + " must be " + expected + ", not " + declared);
      fields[i] = at;
    }
    return new NexmarkRowSource(kind, events, config, fields, rowType);
  }
}
