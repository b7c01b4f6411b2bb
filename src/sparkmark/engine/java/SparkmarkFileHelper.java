// sparkmark's file statuses, built inside the driver JVM.  A run has listed its input
// already: each file's path, size and modification time.  Spark's own read of those files would
// stat every one of them again before the DataFrame exists; instead sparkmark sends its listing
// over as a few strings (one per 65,536 files, so that neither process holds the whole listing
// as text), this class turns them into Hadoop FileStatus objects, and
// sparkmark/sources/fileindex.py hands those to Spark's InMemoryFileIndex.
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

    private final java.util.ArrayList<FileStatus> statuses = new java.util.ArrayList<FileStatus>();

    /** A new, empty builder (the instance sparkmark loads once per JVM only makes these). */
    public SparkmarkFileHelper builder() {
        return new SparkmarkFileHelper();
    }

    /** Adds the files of one chunk of the listing (see above), in its order. */
    public void add(final String listing, final long blockSize) {
        lines(listing, (line, start, a, b, end) -> {
            long size = Long.parseLong(listing.substring(start, a));
            long mtime = Long.parseLong(listing.substring(a + 1, b));
            String path = listing.substring(b + 1, end);
            if (path.startsWith("file:/") && !path.startsWith("file://")) {
                path = "file://" + path.substring(5);  // "file:///in/a.json", as Hadoop's local
            }                                          // file system spells its statuses
            statuses.add(new FileStatus(size, false, 1, blockSize, mtime, path(path)));
        });
    }

    /** {@code new Path(s)}, made from {@code s} as a URI when it is one that Path's string
     *  constructor would leave as it is ({@link #plain}): that constructor splits the string,
     *  builds a URI from the parts (quoting), prints and parses it again and normalizes it,
     *  3.4-4.9 s for a million paths against ~0.5 s.  Both give equal Paths with
     *  the same text (tests/test_fileindex.py holds them to it). */
    static Path path(final String s) {
        if (plain(s)) {
            try {
                return new Path(new java.net.URI(s));
            } catch (java.net.URISyntaxException e) {
                // not expected of a plain string; Path's own constructor decides
            }
        }
        return new Path(s);
    }

    /** Whether {@code s} is "scheme://authority/segment/.../segment" with a lower-case scheme,
     *  an authority of letters, digits, '.' and '-' (empty for "file:///"), and at least one
     *  segment, every segment non-empty, not "." or "..", and of letters, digits, '.', '_', '-'
     *  and '=' only: nothing that Path's string constructor would quote, collapse ("//"), cut
     *  (a trailing '/') or normalize away. */
    static boolean plain(final String s) {
        final int sep = s.indexOf("://");
        if (sep <= 0) {
            return false;
        }
        for (int i = 0; i < sep; i++) {
            final char c = s.charAt(i);
            if (!(c >= 'a' && c <= 'z'
                  || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'))) {
                return false;
            }
        }
        final int slash = s.indexOf('/', sep + 3);
        if (slash < 0) {
            return false;
        }
        for (int i = sep + 3; i < slash; i++) {
            final char c = s.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                  || c == '.' || c == '-')) {
                return false;
            }
        }
        int start = slash + 1;
        final int length = s.length();
        for (int i = start; i <= length; i++) {
            if (i == length || s.charAt(i) == '/') {
                final int n = i - start;
                if (n == 0 || s.charAt(start) == '.' && (n == 1 || n == 2 && s.charAt(start + 1) == '.')) {
                    return false;  // "//", a trailing '/', "." or ".."
                }
                start = i + 1;
                continue;
            }
            final char c = s.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                  || c == '.' || c == '_' || c == '-' || c == '=')) {
                return false;
            }
        }
        return true;
    }

    /** The commit's check that no local file read changed since it was listed, for one chunk
     *  of the listing (the same lines as add() takes, paths "file:/..."): one stat per file in
     *  this JVM, so that the Python process inserts the run's audit rows meanwhile.
     *  Returns "C TAB i" for line i whose size or modification time (ms, floored) differs,
     *  "U TAB i" for a line this JVM could not check (not a local path, a name the JVM cannot
     *  encode, an I/O error: the caller stats those itself), one per line; a file that is gone
     *  is neither (whatever the run read of it cannot be read again). */
    public String changedLocal(final String listing) {
        final StringBuilder out = new StringBuilder();
        lines(listing, (line, start, a, b, end) -> {
            String path = listing.substring(b + 1, end);
            try {
                if (!path.startsWith("file:/")) {
                    throw new java.io.IOException("not a local path");
                }
                long size = Long.parseLong(listing.substring(start, a));
                long mtime = Long.parseLong(listing.substring(a + 1, b));
                java.nio.file.attribute.BasicFileAttributes attrs = java.nio.file.Files
                    .readAttributes(java.nio.file.Paths.get(path.substring(5)),
                                    java.nio.file.attribute.BasicFileAttributes.class);
                long ns = attrs.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS);
                if (attrs.size() != size || Math.floorDiv(ns, 1000000L) != mtime) {  // as Python
                    // floors st_mtime_ns (a time before 1970 included)
                    out.append("C\t").append(line).append('\n');
                }
            } catch (java.nio.file.NoSuchFileException e) {
                // gone: not counted
            } catch (Exception e) {  // InvalidPathException, IOException, a malformed line
                out.append("U\t").append(line).append('\n');
            }
        });
        return out.toString();
    }

    /** What add() and changedLocal() do with one line: its number (from 0), where it starts,
     *  its first and second TAB (-1 when missing) and its end (its newline or the text's). */
    private interface Line {
        void take(int line, int start, int tab1, int tab2, int end);
    }

    /** Calls {@code each} for every line of {@code listing}, in order. */
    private static void lines(String listing, Line each) {
        int start = 0;
        int line = 0;
        int length = listing.length();
        while (start < length) {
            int end = listing.indexOf('\n', start);
            if (end < 0) {
                end = length;
            }
            int a = listing.indexOf('\t', start);
            each.take(line++, start, a, listing.indexOf('\t', a + 1), end);
            start = end + 1;
        }
    }

    /** The statuses added so far, in their order. */
    public FileStatus[] statuses() {
        return statuses.toArray(new FileStatus[0]);
    }
}
