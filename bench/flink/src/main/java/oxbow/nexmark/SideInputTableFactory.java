package oxbow.nexmark;

import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.LookupFunction;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;

/**
 * The connector {@code 'oxbow-side-input'}: Nexmark query 13's bounded side input, the table
 * {@code (key BIGINT, value STRING)} of the keys 0..{@code 'rows'}-1 with the values
 * {@code 'value-' || key} (oxbow's q13 fills its table so), for a lookup join on {@code key}. The
 * Nexmark suite reads the same kind of table from a CSV file; here each lookup task builds it in
 * memory when it opens, and a lookup is a hash probe.
 */
public final class SideInputTableFactory implements DynamicTableSourceFactory {
  public static final String IDENTIFIER = "oxbow-side-input";

  public static final ConfigOption<Integer> ROWS = ConfigOptions.key("rows").intType().defaultValue(10_000);

  @Override
  public String factoryIdentifier() {
    return IDENTIFIER;
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    return new HashSet<>();
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    Set<ConfigOption<?>> options = new HashSet<>();
    options.add(ROWS);
    return options;
  }

  @Override
  public DynamicTableSource createDynamicTableSource(Context context) {
    FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
    helper.validate();
    int rows = helper.getOptions().get(ROWS);
    if (rows < 0) throw new ValidationException("'rows' must not be negative, not " + rows);
    RowType rowType = (RowType) context.getPhysicalRowDataType().getLogicalType();
    if (!rowType.getFieldNames().equals(List.of("key", "value"))
        || rowType.getTypeAt(0).getTypeRoot() != LogicalTypeRoot.BIGINT
        || rowType.getTypeAt(1).getTypeRoot() != LogicalTypeRoot.VARCHAR) {
      throw new ValidationException("the side input's columns must be (key BIGINT, value STRING), not " + rowType);
    }
    return new Source(rows);
  }

  private static final class Source implements LookupTableSource {
    private final int rows;

    Source(int rows) {
      this.rows = rows;
    }

    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
      int[][] keys = context.getKeys();
      if (keys.length != 1 || keys[0].length != 1 || keys[0][0] != 0) {
        throw new ValidationException("the side input is looked up by its key column alone");
      }
      return LookupFunctionProvider.of(new Lookup(rows));
    }

    @Override
    public DynamicTableSource copy() {
      return new Source(rows);
    }

    @Override
    public String asSummaryString() {
      return "oxbow side input (" + rows + " rows)";
    }
  }

  public static final class Lookup extends LookupFunction {
    private final int rows;
    private transient RowData[] table;

    public Lookup(int rows) {
      this.rows = rows;
    }

    @Override
    public void open(FunctionContext context) {
      table = new RowData[rows];
      for (int key = 0; key < rows; key++) table[key] = GenericRowData.of((long) key, StringData.fromString("value-" + key));
    }

    @Override
    public Collection<RowData> lookup(RowData keyRow) {
      if (keyRow.isNullAt(0)) return Collections.emptyList();
      long key = keyRow.getLong(0);
      return key >= 0 && key < rows ? Collections.singletonList(table[(int) key]) : Collections.emptyList();
    }
  }
}
