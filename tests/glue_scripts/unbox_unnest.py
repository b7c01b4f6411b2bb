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

raw = glueContext.create_dynamic_frame.from_catalog(database="ingest", table_name="webhooks", transformation_ctx="raw")
unboxed = Unbox.apply(frame=raw, path="payload", format="json", transformation_ctx="unboxed")
flat = UnnestFrame.apply(frame=unboxed, transformation_ctx="flat")
out = ApplyMapping.apply(frame=flat, mappings=[("hook_id", "string", "hook_id", "string"),
                                               ("`payload.user`", "string", "user", "string"),
                                               ("`payload.clicks`", "long", "clicks", "int")],
                         transformation_ctx="out")
glueContext.write_dynamic_frame.from_options(frame=out, connection_type="s3", connection_options={"path": "s3://out/webhooks"}, format="csv", transformation_ctx="sink")
job.commit()
