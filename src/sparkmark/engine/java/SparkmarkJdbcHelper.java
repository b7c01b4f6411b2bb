// sparkmark's JDBC metadata reads, run inside the driver JVM so that each is one py4j round trip
// instead of one per value.  The same JDBC calls as the py4j path in
// sparkmark/engine/jdbc/jvmlink.py (_JvmLink), in the same order; only where they run changes.
//
// Rows come back as one string: values separated by TAB, each row ended by LF, NULL as \N, and
// backslash, TAB and LF inside values escaped as \\, \t and \n (decoded by sparkmark.engine.jvm.decode_rows).
//
// Rebuild the class after editing (Java 8 bytecode, so any JVM Spark runs on loads it):
//     javac --release 8 -d src/sparkmark/java src/sparkmark/java/SparkmarkJdbcHelper.java
public class SparkmarkJdbcHelper {

    static void put(StringBuilder sb, String v) {
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

    // ------------------------------------------------------------------- closing off the run's path
    // Connection.close() of PgJDBC took 0.2-1 ms here (terminate message, socket teardown), and a
    // run waited for it after its last metadata read.  closeLater hands the close to
    // one daemon thread: the connection holds no transaction (every read is autocommit), so
    // nothing waits on it; closes run in order, and any error is dropped as close() errors were.
    private static final java.util.concurrent.ExecutorService CLOSER =
        java.util.concurrent.Executors.newSingleThreadExecutor(
            new java.util.concurrent.ThreadFactory() {
                public Thread newThread(Runnable r) {
                    Thread t = new Thread(r, "sparkmark-jdbc-close");
                    t.setDaemon(true);
                    return t;
                }
            });

    /** conn.close() on a daemon thread; returns at once. */
    public void closeLater(final java.sql.Connection conn) {
        CLOSER.execute(new Runnable() {
            public void run() {
                try {
                    conn.close();
                } catch (Throwable e) {  // as before: a failed close changes nothing
                }
            }
        });
    }

    // ---------------------------------------------------------------- text in (the reverse of put)
    /** Rows encoded as put() encodes them (TAB between values, LF after each row, \N for
     *  NULL); each row as an array of its values. */
    static java.util.List<String[]> rows(String text) {
        java.util.List<String[]> out = new java.util.ArrayList<String[]>();
        java.util.List<String> row = new java.util.ArrayList<String>();
        StringBuilder v = new StringBuilder();
        boolean isNull = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\\' && i + 1 < text.length()) {
                char e = text.charAt(++i);
                if (e == 'N') {
                    isNull = true;
                } else {
                    v.append(e == 't' ? '\t' : e == 'n' ? '\n' : e);
                }
            } else if (c == '\t' || c == '\n') {
                row.add(isNull ? null : v.toString());
                v.setLength(0);
                isNull = false;
                if (c == '\n') {
                    out.add(row.toArray(new String[0]));
                    row.clear();
                }
            } else {
                v.append(c);
            }
        }
        return out;
    }

    /** driver.connect(url, properties) with the properties given as rows of (name, value):
     *  one py4j round trip instead of one per property. */
    public java.sql.Connection connect(java.sql.Driver driver, String url, String props)
            throws java.sql.SQLException {
        java.util.Properties p = new java.util.Properties();
        for (String[] kv : rows(props)) {
            p.setProperty(kv[0], kv[1]);
        }
        return driver.connect(url, p);
    }

    /** tableColumns on conn's metadata (one round trip, no metadata handle in Python). */
    public String tableColumnsOf(java.sql.Connection conn, String schema, String name)
            throws java.sql.SQLException {
        return tableColumns(conn.getMetaData(), schema, name);
    }

    /** primaryKey on conn's metadata (one round trip, no metadata handle in Python). */
    public String primaryKeyOf(java.sql.Connection conn, String cat, String schema, String name)
            throws java.sql.SQLException {
        return primaryKey(conn.getMetaData(), cat, schema, name);
    }

    // ------------------------------------------------------------ PostgreSQL: one catalog query
    // PgJDBC's getColumns runs a general query (column defaults, comments, a window function,
    // LIKE on every name) that took ~4.4 ms a run here, and getPrimaryKeys ~1.8 ms more.
    // pgTableColumns answers both in one narrower query of the same catalogs: the same
    // tables and columns (relkind r, p, v, f, m; no dropped or system columns; the names as LIKE
    // patterns, null or "" for any; ordered by schema, table, column number), DATA_TYPE and
    // TYPE_NAME as getColumns computes them (STRUCT for composite, DISTINCT for domain, VARCHAR
    // for enum types, else the connection's TypeInfo; serial/bigserial/smallserial for integer
    // columns whose default calls nextval), and each column's KEY_SEQ in its table's primary key.
    // The type, default and primary-key lookups are scalar subqueries, not joins: pg_attrdef is
    // read only for columns that have a default (atthasdef) and pg_index only for tables that
    // have an index (relhasindex), and the planner has a three-way join to order instead of a
    // five-way one; ~0.3 ms less on a fresh connection, same rows (tests/test_jdbc_pgcatalog.py).
    // Columns 8-11 are what PgJDBC's ResultSetMetaData asks the catalog for (below).
    private static final String PG_COLUMNS =
        "SELECT n.nspname, c.relname, a.attname, a.atttypid, "
        + "(SELECT t.typtype FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid), "
        + "CASE WHEN a.atthasdef THEN COALESCE((SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) "
        + "LIKE '%nextval(%' FROM pg_catalog.pg_attrdef d "
        + "WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum), false) ELSE false END, "
        + "CASE WHEN c.relhasindex THEN (SELECT k.seq FROM pg_catalog.pg_index i CROSS JOIN LATERAL "
        + "unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, seq) "
        + "WHERE i.indrelid = c.oid AND i.indisprimary AND k.attnum = a.attnum) END, "
        + "c.oid, a.attnum, a.attnotnull OR (SELECT t.typtype = 'd' AND t.typnotnull "
        + "FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid), %IDENTITY% "
        + "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON c.relnamespace = n.oid "
        + "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid "
        + "WHERE c.relkind IN ('r', 'p', 'v', 'f', 'm') AND a.attnum > 0 AND NOT a.attisdropped";

    /** On a PgJDBC connection: tableColumns' six values per row and the column's KEY_SEQ in
     *  its table's primary key (\N when not in it), from one query.  Throws when conn is not
     *  PgJDBC's (the caller then asks getColumns and getPrimaryKeys).  The same rows also
     *  answer PgJDBC's own column metadata on this connection (see shareFieldMetadata). */
    public String pgTableColumns(java.sql.Connection conn, String schema, String name)
            throws Exception {
        Object typeInfo = call(conn.getClass(), conn, "getTypeInfo", new Class<?>[0]);
        Class<?> infoCls = Class.forName("org.postgresql.core.TypeInfo", false,
                                         conn.getClass().getClassLoader());
        java.lang.reflect.Method sqlType = infoCls.getMethod("getSQLType", int.class);
        java.lang.reflect.Method pgType = infoCls.getMethod("getPGType", int.class);
        // attidentity (identity columns) is PostgreSQL 10's, as in PgJDBC's own query
        boolean identity = conn.getMetaData().getDatabaseMajorVersion() >= 10;
        StringBuilder sql = new StringBuilder(PG_COLUMNS.replace(
            "%IDENTITY%", identity ? "a.attidentity != ''" : "false"));
        java.util.List<String> args = new java.util.ArrayList<String>();
        if (schema != null && !schema.isEmpty()) {
            sql.append(" AND n.nspname LIKE ?");
            args.add(schema);
        }
        if (name != null && !name.isEmpty()) {
            sql.append(" AND c.relname LIKE ?");
            args.add(name);
        }
        sql.append(" ORDER BY n.nspname, c.relname, a.attnum");
        StringBuilder sb = new StringBuilder();
        java.util.List<Object[]> fields = new java.util.ArrayList<Object[]>();
        java.sql.PreparedStatement st = conn.prepareStatement(sql.toString());
        try {
            for (int i = 0; i < args.size(); i++) {
                st.setString(i + 1, args.get(i));
            }
            java.sql.ResultSet rs = st.executeQuery();
            while (rs.next()) {
                int oid = (int) rs.getLong(4);
                String typtype = rs.getString(5);
                int type;
                if ("c".equals(typtype)) {
                    type = java.sql.Types.STRUCT;
                } else if ("d".equals(typtype)) {
                    type = java.sql.Types.DISTINCT;
                } else if ("e".equals(typtype)) {
                    type = java.sql.Types.VARCHAR;
                } else {
                    type = (Integer) sqlType.invoke(typeInfo, oid);
                }
                String typeName = (String) pgType.invoke(typeInfo, oid);
                boolean nextval = rs.getBoolean(6);
                if (nextval) {
                    if ("int4".equals(typeName)) {
                        typeName = "serial";
                    } else if ("int8".equals(typeName)) {
                        typeName = "bigserial";
                    } else if ("int2".equals(typeName)) {
                        typeName = "smallserial";
                    }
                }
                sb.append("\\N\t");  // TABLE_CAT: PgJDBC's getColumns reports none
                put(sb, rs.getString(1));
                sb.append('\t');
                put(sb, rs.getString(2));
                sb.append('\t');
                put(sb, rs.getString(3));
                sb.append('\t');
                sb.append(type);
                sb.append('\t');
                put(sb, typeName);
                sb.append('\t');
                put(sb, rs.getString(7));
                sb.append('\n');
                fields.add(new Object[]{(int) rs.getLong(8), rs.getInt(9), rs.getString(3),
                                        rs.getString(2), rs.getString(1), rs.getBoolean(10),
                                        rs.getBoolean(11) || nextval});
            }
            rs.close();
        } finally {
            st.close();
        }
        shareFieldMetadata(conn, fields);
        return sb.toString();
    }

    // ------------------------------------------------------------------ a query asked ahead
    // An incremental run's upper-bound query is known before its catalog read when the committed
    // bookmark names the table and its keys; pgTableColumnsThen runs it right after the catalog
    // query, in the same py4j round trip (a round trip of ~0.5 ms a run beside a busy
    // driver).  The caller takes the answer only for exactly that SQL, once; a query that fails
    // (a table or key that changed) answers nothing and the caller asks as before.  Only on an
    // autocommit connection, where a failed statement leaves no aborted transaction behind.

    /** firstRow(conn, sql, n)'s text, its length in code points and ':' before it ("-1:" when
     *  the query was not run or failed), then pgTableColumns(conn, schema, name)'s text. */
    public String pgTableColumnsThen(java.sql.Connection conn, String schema, String name,
                                     String sql, int n) throws Exception {
        String columns = pgTableColumns(conn, schema, name);
        String first = null;
        if (conn.getAutoCommit()) {
            try {
                first = firstRow(conn, sql, n);
            } catch (Exception e) {
                first = null;
            }
        }
        if (first == null) {
            return "-1:" + columns;
        }
        return first.codePointCount(0, first.length()) + ":" + first + columns;
    }

    // PgJDBC's ResultSetMetaData learns a result's column names, nullability and auto-increment
    // (which getColumnTypeName needs: "bigserial" for an int8 column whose default calls
    // nextval) from a catalog query of its own, ~1.3-2 ms on a fresh connection, and keeps the
    // answers in the connection's field metadata cache, by table oid and column number.  Spark's
    // schema query (JdbcUtils.getSchema) asks exactly that on the run's connection right after
    // pgTableColumns read the same catalog rows: the catalog was read twice per run.
    // shareFieldMetadata puts pgTableColumns' rows into that cache as PgJDBC's fetchFieldMetaData
    // would (the same expressions: attnotnull OR a NOT NULL domain -> columnNoNulls, identity or
    // a nextval default -> autoIncrement; tests/test_jdbc_pgcatalog.py holds every column of many
    // types to PgJDBC's own answers), so Spark's schema query finds them there.  PgJDBC 42.x
    // only (its FieldMetadata and Key constructors are package-private); anything else, or any
    // error, leaves the cache as it was and PgJDBC asks the catalog itself, as before.
    static void shareFieldMetadata(java.sql.Connection conn, java.util.List<Object[]> fields) {
        try {
            if (fields.isEmpty() || conn.getMetaData().getDriverMajorVersion() != 42) {
                return;
            }
            ClassLoader loader = conn.getClass().getClassLoader();
            Class<?> metaCls = Class.forName("org.postgresql.jdbc.FieldMetadata", false, loader);
            Class<?> keyCls = Class.forName("org.postgresql.jdbc.FieldMetadata$Key", false,
                                            loader);
            java.lang.reflect.Constructor<?> meta = metaCls.getDeclaredConstructor(
                String.class, String.class, String.class, int.class, boolean.class);
            java.lang.reflect.Constructor<?> key = keyCls.getDeclaredConstructor(int.class,
                                                                                 int.class);
            meta.setAccessible(true);
            key.setAccessible(true);
            Object cache = conn.getClass().getMethod("getFieldMetadataCache").invoke(conn);
            java.lang.reflect.Method put = cache.getClass().getMethod(
                "put", Object.class,
                Class.forName("org.postgresql.util.CanEstimateSize", false, loader));
            for (Object[] f : fields) {
                int nullable = (Boolean) f[5] ? java.sql.ResultSetMetaData.columnNoNulls
                                              : java.sql.ResultSetMetaData.columnNullable;
                put.invoke(cache, key.newInstance(f[0], f[1]),
                           meta.newInstance(f[2], f[3], f[4], nullable, f[6]));
            }
        } catch (Throwable e) {  // PgJDBC then asks the catalog itself
        }
    }

    // ------------------------------------------------- Spark's JDBC relation on this connection
    // What sparkmark/sources/jdbcrelation.py documents, in one py4j round trip: Spark's classes
    // are reached by reflection (through this class's loader, whose parent is Spark's), so the
    // same class file runs on Spark 3.5 (Scala 2.12) and 4 (2.13); only public classes' methods
    // are invoked.
    private static final String JDBC = "org.apache.spark.sql.execution.datasources.jdbc.";

    private Class<?> cls(String name) throws ClassNotFoundException {
        return Class.forName(name, true, getClass().getClassLoader());
    }

    private static Object call(Class<?> owner, Object target, String method, Class<?>[] types,
                               Object... args) throws Exception {
        try {
            return owner.getMethod(method, types).invoke(target, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
    }

    /** The Dataset spark.read.jdbc(url, dbtable, predicates, props) returns, its schema read on
     *  conn (left open). wheres: one row per partition, \N for Spark's one partition with no
     *  WHERE of its own; props: rows of (name, value). */
    public Object sparkJdbcRelation(Object session, java.sql.Connection conn, String url,
                                    String dbtable, String wheres, String props)
            throws Exception {
        Class<?> sessionCls = session.getClass();  // classic: a public class on 3.5 and 4
        Class<?> pythonUtils = cls("org.apache.spark.api.python.PythonUtils");
        Class<?> scalaMap = cls("scala.collection.immutable.Map");
        Class<?> option = cls("scala.Option");
        Class<?> optionsCls = cls(JDBC + "JDBCOptions");
        Class<?> utils = cls(JDBC + "JdbcUtils");
        Class<?> structType = cls("org.apache.spark.sql.types.StructType");
        Class<?> function2 = cls("scala.Function2");
        java.util.Map<String, String> params = new java.util.HashMap<String, String>();
        for (String[] kv : rows(props)) {
            params.put(kv[0], kv[1]);
        }
        Object scalaParams = call(pythonUtils, null, "toScalaMap",
                                  new Class<?>[]{java.util.Map.class}, params);
        Object options = optionsCls.getConstructor(String.class, String.class, scalaMap)
            .newInstance(url, dbtable, scalaParams);
        long started = System.nanoTime();
        Object schema = schemaOn(conn, url, options, optionsCls, utils, option);
        long elapsed = System.nanoTime() - started;
        Object custom = call(optionsCls, options, "customSchema", new Class<?>[0]);
        if (!(Boolean) call(option, custom, "isEmpty", new Class<?>[0])) {  // getSchema's rule
            Object state = call(sessionCls, session, "sessionState", new Class<?>[0]);
            Object conf = call(cls("org.apache.spark.sql.internal.SessionState"), state, "conf",
                               new Class<?>[0]);
            Object resolver = call(cls("org.apache.spark.sql.internal.SQLConf"), conf,
                                   "resolver", new Class<?>[0]);
            schema = call(utils, null, "getCustomSchema",
                          new Class<?>[]{structType, String.class, function2}, schema,
                          call(option, custom, "get", new Class<?>[0]), resolver);
        }
        java.util.List<String[]> parts = rows(wheres);
        Class<?> partition = cls("org.apache.spark.Partition");
        java.lang.reflect.Constructor<?> jdbcPartition =
            cls(JDBC + "JDBCPartition").getConstructor(String.class, int.class);
        Object array = java.lang.reflect.Array.newInstance(partition, parts.size());
        for (int i = 0; i < parts.size(); i++) {
            java.lang.reflect.Array.set(array, i, jdbcPartition.newInstance(parts.get(i)[0], i));
        }
        Class<?> relationCls = cls(JDBC + "JDBCRelation");
        Object relation = null;
        for (java.lang.reflect.Constructor<?> c : relationCls.getConstructors()) {
            Class<?>[] types = c.getParameterTypes();
            if (types.length == 5 && types[3] == scalaMap) {  // Spark 4: the relation's metrics
                Object sc = call(sessionCls, session, "sparkContext", new Class<?>[0]);
                Object metric = call(utils, null, "createSchemaFetchMetric",
                                     new Class<?>[]{cls("org.apache.spark.SparkContext")}, sc);
                call(cls("org.apache.spark.sql.execution.metric.SQLMetric"), metric, "add",
                     new Class<?>[]{long.class}, elapsed);
                java.util.Map<String, Object> metrics = new java.util.HashMap<String, Object>();
                metrics.put((String) call(relationCls, null, "schemaFetchKey", new Class<?>[0]),
                            metric);
                Object scalaMetrics = call(pythonUtils, null, "toScalaMap",
                                           new Class<?>[]{java.util.Map.class}, metrics);
                relation = c.newInstance(schema, array, options, scalaMetrics, session);
                break;
            }
            if (types.length == 4 && types[3].isAssignableFrom(session.getClass())) {  // 3.5
                relation = c.newInstance(schema, array, options, session);
                break;
            }
        }
        if (relation == null) {
            throw new NoSuchMethodException("JDBCRelation: no known constructor");
        }
        return session.getClass()
            .getMethod("baseRelationToDataFrame", cls("org.apache.spark.sql.sources.BaseRelation"))
            .invoke(session, relation);
    }

    /** Spark's JDBCRDD.resolveTable on conn: Spark 4 takes the connection; on Spark 3.5 its
     *  statement runs here as Spark runs it (prepareQuery + the dialect's schema query, the
     *  query timeout, JdbcUtils.getSchema with every column nullable). */
    private Object schemaOn(java.sql.Connection conn, String url, Object options,
                            Class<?> optionsCls, Class<?> utils, Class<?> option)
            throws Exception {
        Class<?> rdd = cls(JDBC + "JDBCRDD");
        try {
            java.lang.reflect.Method resolve = rdd.getMethod(
                "resolveTable", optionsCls, java.sql.Connection.class, option, option);
            Object none = cls("scala.None$").getField("MODULE$").get(null);
            try {
                return resolve.invoke(null, options, conn, none, none);
            } catch (java.lang.reflect.InvocationTargetException e) {
                Throwable cause = e.getCause();
                throw cause instanceof Exception ? (Exception) cause : e;
            }
        } catch (NoSuchMethodException e) {
            // Spark 3.5: below
        }
        Class<?> dialectCls = cls("org.apache.spark.sql.jdbc.JdbcDialect");
        Object dialect = call(cls("org.apache.spark.sql.jdbc.JdbcDialects"), null, "get",
                              new Class<?>[]{String.class}, url);
        String table = (String) call(optionsCls, options, "tableOrQuery", new Class<?>[0]);
        String query = (String) call(optionsCls, options, "prepareQuery", new Class<?>[0])
            + call(dialectCls, dialect, "getSchemaQuery", new Class<?>[]{String.class}, table);
        java.sql.PreparedStatement statement = conn.prepareStatement(query);
        try {
            statement.setQueryTimeout(
                (Integer) call(optionsCls, options, "queryTimeout", new Class<?>[0]));
            java.sql.ResultSet rs = statement.executeQuery();
            try {
                return call(utils, null, "getSchema", new Class<?>[]{
                    java.sql.ResultSet.class, dialectCls, boolean.class, boolean.class},
                    rs, dialect, true,
                    call(optionsCls, options, "preferTimestampNTZ", new Class<?>[0]));
            } finally {
                rs.close();
            }
        } finally {
            statement.close();
        }
    }
}
