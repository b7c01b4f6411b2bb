// sparkmark's JDBC metadata reads, run inside the driver JVM so that each is one py4j round trip
// instead of one per value (issue 26).  The same JDBC calls as the py4j path in
// sparkmark/jdbcconn.py (_JvmLink), in the same order; only where they run changes.
//
// Rows come back as one string: values separated by TAB, each row ended by LF, NULL as \N, and
// backslash, TAB and LF inside values escaped as \\, \t and \n (decoded by jdbcconn._decode_rows).
//
// Rebuild the class after editing (Java 8 bytecode, so any JVM Spark runs on loads it):
//     javac --release 8 -d src/sparkmark/java src/sparkmark/java/SparkmarkJdbcHelper.java
public class SparkmarkJdbcHelper {

    private static void put(StringBuilder sb, String v) {
        if (v == null) {
            sb.append("\\N");
            return;
        }
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c == '\\') {
                sb.append("\\\\");
            } else if (c == '\t') {
                sb.append("\\t");
            } else if (c == '\n') {
                sb.append("\\n");
            } else {
                sb.append(c);
            }
        }
    }

    /** getColumns(null, schema, name, "%"): TABLE_CAT, TABLE_SCHEM, TABLE_NAME, COLUMN_NAME,
     *  DATA_TYPE (getInt), TYPE_NAME per row. */
    public String tableColumns(java.sql.DatabaseMetaData md, String schema, String name)
            throws java.sql.SQLException {
        StringBuilder sb = new StringBuilder();
        java.sql.ResultSet rs = md.getColumns(null, schema, name, "%");
        try {
            while (rs.next()) {
                put(sb, rs.getString("TABLE_CAT"));
                sb.append('\t');
                put(sb, rs.getString("TABLE_SCHEM"));
                sb.append('\t');
                put(sb, rs.getString("TABLE_NAME"));
                sb.append('\t');
                put(sb, rs.getString("COLUMN_NAME"));
                sb.append('\t');
                sb.append(rs.getInt("DATA_TYPE"));
                sb.append('\t');
                put(sb, rs.getString("TYPE_NAME"));
                sb.append('\n');
            }
        } finally {
            rs.close();
        }
        return sb.toString();
    }

    /** getPrimaryKeys(cat, schema, name): KEY_SEQ (getShort), COLUMN_NAME per row. */
    public String primaryKey(java.sql.DatabaseMetaData md, String cat, String schema, String name)
            throws java.sql.SQLException {
        StringBuilder sb = new StringBuilder();
        java.sql.ResultSet rs = md.getPrimaryKeys(cat, schema, name);
        try {
            while (rs.next()) {
                sb.append(rs.getShort("KEY_SEQ"));
                sb.append('\t');
                put(sb, rs.getString("COLUMN_NAME"));
                sb.append('\n');
            }
        } finally {
            rs.close();
        }
        return sb.toString();
    }

    /** The first row of sql (setMaxRows(1)), its first n columns by getString; "" for none. */
    public String firstRow(java.sql.Connection conn, String sql, int n)
            throws java.sql.SQLException {
        java.sql.Statement st = conn.createStatement();
        try {
            st.setMaxRows(1);
            java.sql.ResultSet rs = st.executeQuery(sql);
            if (n < 0) {
                n = rs.getMetaData().getColumnCount();
            }
            StringBuilder sb = new StringBuilder();
            if (rs.next()) {
                for (int i = 1; i <= n; i++) {
                    if (i > 1) {
                        sb.append('\t');
                    }
                    put(sb, rs.getString(i));
                }
                sb.append('\n');
            }
            return sb.toString();
        } finally {
            st.close();
        }
    }
}
