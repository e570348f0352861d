// Prints what pgjdbc's DatabaseMetaData and ResultSetMetaData return for the schema of one
// database, one JSON object a line, so test/tools/jdbc.test.ts can compare oxbow's answers with
// PostgreSQL 15's. Run as a single-file source program:
//
//   java -cp "$(scripts/jdbc-tools.sh)" test/tools/jdbc/Metadata.java URL USER [SCHEMA]
//
// Each line is {"call": "...", "columns": [...], "rows": [[...], ...]} or, when the call throws,
// {"call": "...", "error": {"sqlstate": "...", "message": "..."}}: every call runs whatever the one
// before did, on a connection that must stay usable.
import java.sql.*;
import java.util.*;

public class Metadata {
  static final StringBuilder out = new StringBuilder();

  static String json(Object value) {
    if (value == null) return "null";
    if (value instanceof Boolean || value instanceof Integer || value instanceof Long || value instanceof Short) return value.toString();
    String s = value.toString();
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c)); else b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static String jsonList(List<?> values) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < values.size(); i++) {
      if (i > 0) b.append(',');
      Object v = values.get(i);
      b.append(v instanceof List ? jsonList((List<?>) v) : json(v));
    }
    return b.append(']').toString();
  }

  interface Call { ResultSet run() throws SQLException; }
  interface Rows { List<List<Object>> run() throws SQLException; }

  static void emitError(String call, SQLException e) {
    System.out.println("{\"call\":" + json(call) + ",\"error\":{\"sqlstate\":" + json(e.getSQLState()) + ",\"message\":" + json(e.getMessage()) + "}}");
  }

  /** A DatabaseMetaData call: its result set's column labels and every row, values as strings. */
  static void resultSet(String call, Call body) {
    try (ResultSet rs = body.run()) {
      ResultSetMetaData md = rs.getMetaData();
      List<Object> columns = new ArrayList<>();
      for (int i = 1; i <= md.getColumnCount(); i++) columns.add(md.getColumnLabel(i));
      List<Object> rows = new ArrayList<>();
      while (rs.next()) {
        List<Object> row = new ArrayList<>();
        for (int i = 1; i <= md.getColumnCount(); i++) row.add(rs.getString(i));
        rows.add(row);
      }
      System.out.println("{\"call\":" + json(call) + ",\"columns\":" + jsonList(columns) + ",\"rows\":" + jsonList(rows) + "}");
    } catch (SQLException e) {
      emitError(call, e);
    } catch (RuntimeException e) {
      // The driver failed on what the server answered (a value it could not parse).
      emitError(call, new SQLException(e.toString(), "java"));
    }
  }

  /** A call whose rows the program builds itself (ResultSetMetaData, fetch size, savepoints). */
  static void rows(String call, List<Object> columns, Rows body) {
    try {
      List<List<Object>> rows = body.run();
      System.out.println("{\"call\":" + json(call) + ",\"columns\":" + jsonList(columns) + ",\"rows\":" + jsonList(new ArrayList<Object>(rows)) + "}");
    } catch (SQLException e) {
      emitError(call, e);
    }
  }

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String user = args[1];
    String schema = args.length > 2 ? args[2] : "public";
    Properties props = new Properties();
    props.setProperty("user", user);
    props.setProperty("password", "");
    try (Connection conn = DriverManager.getConnection(url, props)) {
      DatabaseMetaData meta = conn.getMetaData();
      resultSet("getSchemas", () -> meta.getSchemas(null, schema));
      resultSet("getCatalogs", meta::getCatalogs);
      resultSet("getTableTypes", meta::getTableTypes);
      resultSet("getTables", () -> meta.getTables(null, schema, "%", null));
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = meta.getTables(null, schema, "%", new String[] {"TABLE", "VIEW", "MATERIALIZED VIEW"})) {
        while (rs.next()) tables.add(rs.getString("TABLE_NAME"));
      } catch (SQLException e) {
        emitError("getTables(names)", e);
      }
      Collections.sort(tables);
      resultSet("getColumns", () -> meta.getColumns(null, schema, "%", "%"));
      for (String table : tables) {
        resultSet("getPrimaryKeys " + table, () -> meta.getPrimaryKeys(null, schema, table));
        resultSet("getIndexInfo " + table, () -> meta.getIndexInfo(null, schema, table, false, false));
        resultSet("getImportedKeys " + table, () -> meta.getImportedKeys(null, schema, table));
        resultSet("getExportedKeys " + table, () -> meta.getExportedKeys(null, schema, table));
        resultSet("getBestRowIdentifier " + table, () -> meta.getBestRowIdentifier(null, schema, table, DatabaseMetaData.bestRowSession, true));
        resultSet("getColumnPrivileges " + table, () -> meta.getColumnPrivileges(null, schema, table, "%"));
      }
      resultSet("getCrossReference", () -> meta.getCrossReference(null, schema, "customers", null, schema, "orders"));
      resultSet("getAllSchemas", meta::getSchemas);
      resultSet("getAllTables", () -> meta.getTables(null, null, "%", new String[] {"TABLE", "VIEW", "MATERIALIZED VIEW", "SYSTEM TABLE", "SYSTEM VIEW"}));
      resultSet("getTablePrivileges", () -> meta.getTablePrivileges(null, schema, "%"));
      resultSet("getTypeInfo", meta::getTypeInfo);
      resultSet("getFunctions", () -> meta.getFunctions(null, schema, "%"));
      resultSet("getFunctionColumns", () -> meta.getFunctionColumns(null, schema, "%", "%"));
      resultSet("getProcedures", () -> meta.getProcedures(null, schema, "%"));
      resultSet("getUDTs", () -> meta.getUDTs(null, schema, "%", null));
      resultSet("getClientInfoProperties", meta::getClientInfoProperties);
      rows("keywords", List.of("value"), () -> List.of(List.of(meta.getSQLKeywords())));
      rows("identifierQuote", List.of("value"), () -> List.of(List.of(meta.getIdentifierQuoteString())));

      // ResultSetMetaData of a SELECT * of each relation: what a grid shows above the rows.
      for (String table : tables) {
        rows("ResultSetMetaData " + table,
            List.of("name", "label", "typeName", "type", "nullable", "autoIncrement", "precision", "scale", "tableName", "schemaName", "className"),
            () -> {
              List<List<Object>> result = new ArrayList<>();
              try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM " + schema + "." + table + " WHERE false")) {
                ResultSetMetaData md = rs.getMetaData();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                  result.add(Arrays.asList(md.getColumnName(i), md.getColumnLabel(i), md.getColumnTypeName(i), md.getColumnType(i),
                      md.isNullable(i), md.isAutoIncrement(i), md.getPrecision(i), md.getScale(i), md.getTableName(i), md.getSchemaName(i),
                      md.getColumnClassName(i)));
                }
              }
              return result;
            });
      }

      // A cursor: autocommit off and a fetch size make pgjdbc read the portal in batches.
      rows("fetchSize", List.of("rows", "sum"), () -> {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
          st.setFetchSize(7);
          long count = 0, sum = 0;
          try (ResultSet rs = st.executeQuery("SELECT g FROM generate_series(1, 1000) AS g")) {
            while (rs.next()) { count++; sum += rs.getLong(1); }
          }
          conn.commit();
          return List.of(Arrays.asList(count, sum));
        } finally {
          try { conn.rollback(); } catch (SQLException ignored) {}
          conn.setAutoCommit(true);
        }
      });

      // Savepoints: roll back to one, release another, commit.
      rows("savepoints", List.of("id"), () -> {
        try (Statement st = conn.createStatement()) {
          st.execute("CREATE TABLE jdbc_savepoints (id int PRIMARY KEY)");
        }
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
          st.executeUpdate("INSERT INTO jdbc_savepoints VALUES (1)");
          Savepoint first = conn.setSavepoint("first");
          st.executeUpdate("INSERT INTO jdbc_savepoints VALUES (2)");
          conn.rollback(first);
          Savepoint second = conn.setSavepoint();
          st.executeUpdate("INSERT INTO jdbc_savepoints VALUES (3)");
          conn.releaseSavepoint(second);
          conn.commit();
        } finally {
          try { conn.rollback(); } catch (SQLException ignored) {}
          conn.setAutoCommit(true);
        }
        List<List<Object>> result = new ArrayList<>();
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT id FROM jdbc_savepoints ORDER BY id")) {
          while (rs.next()) result.add(List.of(rs.getInt(1)));
        }
        return result;
      });

      rows("alive", List.of("value"), () -> {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
          rs.next();
          return List.of(List.of(rs.getInt(1)));
        }
      });
    }
  }
}
