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

logs = glueContext.create_dynamic_frame.from_options("s3", {"paths": ["s3://lake/applogs/"]}, format="json", transformation_ctx="logs")
errors = Filter.apply(frame=logs, f=lambda r: r["level"] == "ERROR")
glueContext.write_dynamic_frame.from_options(frame=errors, connection_type="s3", connection_options={"path": "s3://out/applog_errors"}, format="json")
# (the author forgot job.commit())
