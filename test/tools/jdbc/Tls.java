// pgjdbc over TLS: a connection with sslmode=require reads its own pg_stat_ssl row and the sslinfo
// functions; then one with sslmode=disable, which a server that requires TLS refuses. Prints one
// JSON object a line, so test/tools/tls-drivers.test.ts can compare oxbow (--tls-required) with
// PostgreSQL 15 (ssl=on, a hostssl-only entry). Run as a single-file source program:
//
//   java -cp "$(scripts/jdbc-tools.sh)" test/tools/jdbc/Tls.java URL USER
import java.sql.*;
import java.util.*;

public class Tls {
  static String json(Object value) {
    if (value == null) return "null";
    if (value instanceof Boolean || value instanceof Number) return value.toString();
    return "\"" + value.toString().replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  public static void main(String[] args) throws Exception {
    String url = args[0];
    Properties secure = new Properties();
    secure.setProperty("user", args[1]);
    secure.setProperty("sslmode", "require");
    try (Connection connection = DriverManager.getConnection(url, secure); Statement statement = connection.createStatement()) {
      StringBuilder row = new StringBuilder("[");
      try (ResultSet rs = statement.executeQuery("SELECT ssl, version, cipher, bits, client_dn, client_serial, issuer_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()")) {
        rs.next();
        for (int i = 1; i <= 7; i++) row.append(i > 1 ? "," : "").append(json(rs.getString(i)));
      }
      row.append("]");
      System.out.println("{\"call\":\"pg_stat_ssl\",\"row\":" + row + "}");
      try (ResultSet rs = statement.executeQuery("SELECT ssl_is_used(), ssl_version(), ssl_cipher()")) {
        rs.next();
        System.out.println("{\"call\":\"sslinfo\",\"row\":[" + json(rs.getBoolean(1)) + "," + json(rs.getString(2)) + "," + json(rs.getString(3)) + "]}");
      }
    }
    Properties plain = new Properties();
    plain.setProperty("user", args[1]);
    plain.setProperty("sslmode", "disable");
    try (Connection connection = DriverManager.getConnection(url, plain)) {
      System.out.println("{\"call\":\"plaintext\",\"sqlstate\":null}");
    } catch (SQLException error) {
      System.out.println("{\"call\":\"plaintext\",\"sqlstate\":" + json(error.getSQLState()) + "}");
    }
  }
}
