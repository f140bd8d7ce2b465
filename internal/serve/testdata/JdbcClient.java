// Run by TestServeClients (clients_test.go): pgjdbc against dpsql serve, as a Java user
// would: metadata, a prepared statement run past pgjdbc's prepareThreshold (a named
// server-side statement from the sixth run), warnings, and autocommit off.
// args: host port user password. Prints one line per check.
import java.sql.*;

public class JdbcClient {
  public static void main(String[] a) throws Exception {
    String url = "jdbc:postgresql://" + a[0] + ":" + a[1] + "/shop";
    try (Connection c = DriverManager.getConnection(url, a[2], a[3])) {
      DatabaseMetaData md = c.getMetaData();
      System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
      try (ResultSet t = md.getTables(null, null, "%", new String[] {"TABLE"})) {
        while (t.next()) System.out.println("table " + t.getString("TABLE_SCHEM") + "." + t.getString("TABLE_NAME") + " " + t.getString("REMARKS"));
      }
      try (ResultSet cols = md.getColumns(null, null, "visits", "%")) {
        while (cols.next()) System.out.println("column " + cols.getString("COLUMN_NAME") + " " + cols.getString("TYPE_NAME"));
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-5, kappa=1) "
          + "shop, ANON_COUNT(*) AS n FROM visits WHERE shop = ? GROUP BY shop")) {
        for (int i = 0; i < 6; i++) {
          ps.setString(1, "shop" + (i % 3));
          try (ResultSet r = ps.executeQuery()) {
            while (r.next()) System.out.println("run " + i + " " + r.getString("shop") + " " + r.getLong("n"));
          }
          SQLWarning w = ps.getWarnings();
          if (i == 5) System.out.println("warning " + (w != null && w.getMessage().startsWith("charged")));
        }
      }
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        try {
          s.executeQuery("SELECT * FROM visits");
          System.out.println("raw read answered");
        } catch (SQLException e) {
          System.out.println("raw read refused " + e.getSQLState());
        }
      }
      c.rollback();
    }
  }
}
