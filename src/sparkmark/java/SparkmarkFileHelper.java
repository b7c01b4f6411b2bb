// sparkmark's file statuses, built inside the driver JVM (issue 26).  A run has listed its input
// already: each file's path, size and modification time.  Spark's own read of those files would
// stat every one of them again before the DataFrame exists; instead sparkmark sends its listing
// over as one string, this class turns it into Hadoop FileStatus objects in one py4j round trip,
// and sparkmark/sources/fileindex.py hands them to Spark's InMemoryFileIndex.
//
// The string holds one file per line: "size TAB mtime TAB path" (the path last, so it may hold a
// TAB; a path with a newline is never sent).  A local path is spelled "file:///..." as Hadoop's
// local file system spells the statuses Spark reads (input_file_name() shows that spelling).  Only Hadoop's public FileStatus/Path API is used,
// so the class loads next to any Spark (3.5 and 4, Scala 2.12 and 2.13).
//
// Rebuild the class after editing (Java 8 bytecode, so any JVM Spark runs on loads it):
//     javac --release 8 -cp <pyspark>/jars/hadoop-client-api-*.jar \
//         -d src/sparkmark/java src/sparkmark/java/SparkmarkFileHelper.java
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

public class SparkmarkFileHelper {

    /** The statuses of the files in {@code listing} (see above), in its order. */
    public FileStatus[] statuses(String listing, long blockSize) {
        if (listing.isEmpty()) {
            return new FileStatus[0];
        }
        int count = 1;
        for (int i = listing.indexOf('\n'); i >= 0; i = listing.indexOf('\n', i + 1)) {
            count++;
        }
        FileStatus[] out = new FileStatus[count];
        int start = 0;
        for (int n = 0; n < count; n++) {
            int end = listing.indexOf('\n', start);
            if (end < 0) {
                end = listing.length();
            }
            int a = listing.indexOf('\t', start);
            int b = listing.indexOf('\t', a + 1);
            long size = Long.parseLong(listing.substring(start, a));
            long mtime = Long.parseLong(listing.substring(a + 1, b));
            String path = listing.substring(b + 1, end);
            if (path.startsWith("file:/") && !path.startsWith("file://")) {
                path = "file://" + path.substring(5);  // "file:///in/a.json", as Hadoop's local
            }                                          // file system spells its statuses
            out[n] = new FileStatus(size, false, 1, blockSize, mtime, new Path(path));
            start = end + 1;
        }
        return out;
    }
}
