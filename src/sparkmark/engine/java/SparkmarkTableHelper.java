// sparkmark's Iceberg target steps, run inside the driver JVM so that each is one py4j round trip
// instead of one per call (call by call, a 10,000-row write made 41 round trips against
// plain Spark's 10).  The same Iceberg and Spark calls, in the same order, as the py4j path in
// sparkmark/sinks/table.py (_checked_table, the staged append, _staged_snapshot, _fast_forward);
// that path stays the fallback, and every answer that is not the common case ("not found",
// "not a fast-forward") is left to it.
//
// Text comes back as sparkmark/engine/jdbc/jvmlink.py's rows: values separated by TAB, each row ended by
// LF, NULL as \N (SparkmarkJdbcHelper.put); options go in the same way.
//
// The Iceberg source's two steps (sparkmark/sources/table.py) are here too: the metadata look
// (the table loaded and refreshed, its current snapshot, the range's snapshots) and the
// DataFrame load, one round trip each instead of five each.
//
// Rebuild the class after editing (Java 8 bytecode; Spark's and Iceberg's public API only):
//     javac --release 8 -cp "<pyspark 3.5>/jars/*:<iceberg-spark-runtime-3.5 jar>" \
//         -d src/sparkmark/engine/java src/sparkmark/engine/java/SparkmarkTableHelper.java \
//         src/sparkmark/engine/java/SparkmarkJdbcHelper.java
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.DataFrameWriterV2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;

public class SparkmarkTableHelper {

    static final String WAP_ID_CONF = "spark.wap.id";

    /** Table {@code name} loaded through the session's catalog (Spark3Util.loadIcebergTable),
     *  its metadata refreshed: the base of the write's later steps. */
    public Target open(SparkSession session, String name) throws Exception {
        Table table = Spark3Util.loadIcebergTable(session, name);
        Target t = new Target(session, name, table);
        t.base = t.ops.refresh();
        return t;
    }

    /** The source's metadata look, as sparkmark/engine/tablemeta.py's py4j path makes it
     *  (open_table, TableHandle.current, TableHandle.walk, the whole document when the walk
     *  does not reach): table {@code name} loaded through the session's catalog, its metadata
     *  refreshed, and one JSON object.  "current": the main branch's snapshot (SnapshotParser's
     *  JSON; null before the first).  When {@code after} is given and the range's top
     *  ({@code through}, else the current snapshot) is another snapshot: "chain", the snapshots
     *  after {@code after} up to the top, newest first, followed through parent links (at most
     *  {@code limit}); or, when that walk does not reach {@code after} (not an ancestor, an
     *  expired snapshot on the way, a longer range, an error), "metadata": the whole metadata
     *  document (TableMetadataParser's JSON) the walk read. */
    public String range(SparkSession session, String name, String after, String through,
                        int limit) throws Exception {
        Table table = Spark3Util.loadIcebergTable(session, name);
        TableMetadata base = ((HasTableOperations) table).operations().refresh();
        Snapshot current = base.currentSnapshot();
        StringBuilder sb = new StringBuilder("{\"current\":");
        sb.append(current == null ? "null" : SnapshotParser.toJson(current));
        Long top = through != null ? Long.valueOf(through)
                : current == null ? null : Long.valueOf(current.snapshotId());
        if (after != null && top != null && top.longValue() != Long.parseLong(after)) {
            List<Snapshot> chain;
            try {
                chain = walk(base, top.longValue(), Long.parseLong(after), limit);
            } catch (RuntimeException e) {
                chain = null;  // the whole document decides, as on the py4j path
            }
            if (chain != null) {
                sb.append(",\"chain\":[");
                for (int i = 0; i < chain.size(); i++) {
                    if (i > 0) {
                        sb.append(',');
                    }
                    sb.append(SnapshotParser.toJson(chain.get(i)));
                }
                sb.append(']');
            } else {
                sb.append(",\"metadata\":").append(TableMetadataParser.toJson(base));
            }
        }
        return sb.append('}').toString();
    }

    /** TableHandle.walk: the snapshots after {@code after} up to {@code top}, newest first;
     *  null when {@code after} is not reached within {@code limit} snapshots. */
    static List<Snapshot> walk(TableMetadata metadata, long top, long after, int limit) {
        List<Snapshot> out = new ArrayList<Snapshot>();
        Snapshot at = metadata.snapshot(top);
        while (at != null && out.size() < limit) {
            if (at.snapshotId() == after) {
                return out;
            }
            out.add(at);
            Long parent = at.parentId();
            if (parent == null) {
                return null;
            }
            if (parent.longValue() == after) {
                return out;
            }
            at = metadata.snapshot(parent.longValue());
        }
        return null;
    }

    /** {@code session.read().format("iceberg").option(k, v)...load(name)}: the source's
     *  DataFrame (options: rows of name and value, in order). */
    public Dataset<Row> load(SparkSession session, String name, String options) {
        DataFrameReader reader = session.read().format("iceberg");
        for (String[] kv : SparkmarkJdbcHelper.rows(options)) {
            reader = reader.option(kv[0], kv[1]);
        }
        return reader.load(name);
    }

    /** One write's target table and the metadata it last saw. */
    public static class Target {
        final SparkSession session;
        final String name;
        final Table table;
        final TableOperations ops;
        TableMetadata base;

        Target(SparkSession session, String name, Table table) {
            this.session = session;
            this.name = name;
            this.table = table;
            this.ops = ((HasTableOperations) table).operations();
        }

        /** The Java table (for the py4j fallbacks). */
        public Table table() {
            return table;
        }

        /** The metadata this target last saw. */
        public TableMetadata base() {
            return base;
        }

        /** Two rows: the current schema's column names, then the value of {@code property}
         *  (\N when unset), both from the refreshed metadata. */
        public String describe(String property) {
            StringBuilder sb = new StringBuilder();
            List<Types.NestedField> fields = base.schema().columns();
            for (int i = 0; i < fields.size(); i++) {
                if (i > 0) {
                    sb.append('\t');
                }
                SparkmarkJdbcHelper.put(sb, fields.get(i).name());
            }
            sb.append('\n');
            SparkmarkJdbcHelper.put(sb, base.property(property, null));
            sb.append('\n');
            return sb.toString();
        }

        /** {@code dataset.writeTo(name).option(k, v)...append()} with the session's
         *  spark.wap.id set to {@code wapId} for the write and restored after it. */
        public void append(Dataset<?> dataset, String options, String wapId) throws Exception {
            RuntimeConfig conf = session.conf();
            String before = conf.get(WAP_ID_CONF, null);
            conf.set(WAP_ID_CONF, wapId);
            try {
                DataFrameWriterV2<?> writer = dataset.writeTo(name);
                for (String[] kv : SparkmarkJdbcHelper.rows(options)) {
                    writer = writer.option(kv[0], kv[1]);
                }
                writer.append();
            } finally {
                if (before == null) {
                    conf.unset(WAP_ID_CONF);
                } else {
                    conf.set(WAP_ID_CONF, before);
                }
            }
        }

        /** Among the {@code limit} newest snapshots of the metadata as this process last saw it
         *  (the write's own commit, no I/O), the one whose summary has wap.id {@code wapId}:
         *  one row of its id, added-records, parent id and the main snapshot's id (\N for
         *  none), that metadata kept as the base; "" when not there. */
        public String staged(String wapId, int limit) {
            TableMetadata metadata = ops.current();
            List<Snapshot> snaps = metadata.snapshots();
            for (int i = snaps.size() - 1; i >= 0 && i >= snaps.size() - limit; i--) {
                Snapshot s = snaps.get(i);
                Map<String, String> summary = s.summary();
                if (summary != null && wapId.equals(summary.get("wap.id"))) {
                    Snapshot main = metadata.currentSnapshot();
                    base = metadata;
                    StringBuilder sb = new StringBuilder();
                    sb.append(s.snapshotId()).append('\t');
                    SparkmarkJdbcHelper.put(sb, summary.get("added-records"));
                    sb.append('\t');
                    SparkmarkJdbcHelper.put(sb, s.parentId() == null ? null
                            : String.valueOf(s.parentId()));
                    sb.append('\t');
                    SparkmarkJdbcHelper.put(sb, main == null ? null
                            : String.valueOf(main.snapshotId()));
                    sb.append('\n');
                    return sb.toString();
                }
            }
            return "";
        }

        /** Move the main branch to {@code snapshotId} when its parent is main's snapshot in the
         *  base and the refreshed table is still at the base; the commit is made against the
         *  base, so it fails when anyone committed since.  "done", or "done cached" when the
         *  session has cached data; else "no: <why>" and nothing was committed (or the outcome
         *  is unknown): the caller cherry-picks, which decides. */
        public String fastForward(long snapshotId) {
            try {
                if (base == null) {
                    return "no: no base";
                }
                Snapshot staged = base.snapshot(snapshotId);
                Snapshot main = base.currentSnapshot();
                Long parent = staged == null ? null : staged.parentId();
                Long current = main == null ? null : main.snapshotId();
                if (staged == null || (parent == null ? current != null : !parent.equals(current))) {
                    return "no: not a fast-forward";
                }
                if (!ops.refresh().equals(base)) {
                    return "no: the table changed";
                }
                ops.commit(base, TableMetadata.buildFrom(base)
                        .setBranchSnapshot(snapshotId, "main").build());
            } catch (Exception e) {
                return "no: " + e;
            }
            try {
                Object state = session.getClass().getMethod("sharedState").invoke(session);
                Object cache = state.getClass().getMethod("cacheManager").invoke(state);
                Object empty = cache.getClass().getMethod("isEmpty").invoke(cache);
                return Boolean.TRUE.equals(empty) ? "done" : "done cached";
            } catch (Exception e) {
                return "done";
            }
        }
    }
}
