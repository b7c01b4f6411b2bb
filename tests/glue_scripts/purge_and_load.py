import sys
from sparkmark.glue.transforms import *
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME'])
sc = SparkContext()
glueContext = GlueContext(sc)
job = Job(glueContext)
job.init(args['JOB_NAME'], args)

# housekeeping first: old scratch files and an old export table
glueContext.purge_s3_path("s3://out/scratch/", {"retentionPeriod": 1, "excludeStorageClasses": ["GLACIER"]})
glueContext.purge_table("scratch", "exports", {"retentionPeriod": 0})

readings = glueContext.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": ["s3://lake/readings/"]},
    format="csv",
    format_options={"withHeader": True, "separator": ";"},
    transformation_ctx="readings")
typed = ApplyMapping.apply(frame=readings, mappings=[("sensor", "string", "sensor", "string"),
                                                     ("celsius", "string", "celsius", "double")],
                           transformation_ctx="typed")
glueContext.write_dynamic_frame.from_options(frame=typed, connection_type="s3",
                                             connection_options={"path": "s3://out/readings/"},
                                             format="csv", transformation_ctx="readings_sink")
job.commit()
