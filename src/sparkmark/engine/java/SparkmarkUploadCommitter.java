// The output committer of sparkmark's no-copy S3 publish (option publish="uploads" on an s3a
// file target).  Spark's SQL commit protocol gives every task file the path
// <output>/<partition dirs>/<name> when the committer is not a FileOutputCommitter; sparkmark
// points <output> at <target>/__magic/<run>/<n>/__base, where Hadoop's S3A connector (its
// "magic" paths, fs.s3a.committer.magic.enabled) turns each file into a multipart upload to
// <target>/<partition dirs>/<name> that is NOT completed, plus a small "<name>.pending" file
// describing it.  This committer does nothing at all: the uploads stay pending through Spark's
// job commit, and sparkmark completes them itself after its state commit (or aborts them).
//
// Only Hadoop's public mapreduce OutputCommitter API is used, so the class loads next to any
// Spark (3.5 and 4, Scala 2.12 and 2.13).  Spark must load it by name from its own class path:
// sparkmark ships it as sparkmark-committer.jar beside this file (spark.jars; see
// sparkmark.sinks.uploads.committer_jar).  Rebuild after editing:
//     python -m sparkmark.devtools.jars committer
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

public class SparkmarkUploadCommitter extends OutputCommitter {

    public SparkmarkUploadCommitter() {
    }

    @Override
    public void setupJob(JobContext context) {
    }

    @Override
    public void setupTask(TaskAttemptContext context) {
    }

    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) {
        return false;
    }

    @Override
    public void commitTask(TaskAttemptContext context) {
    }

    @Override
    public void abortTask(TaskAttemptContext context) {
    }
}
