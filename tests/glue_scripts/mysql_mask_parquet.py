# The shape of AWS's aws-glue-etl-sample-cdk job: an Aurora MySQL table read through a Glue
# connection (extract_jdbc_conf, then from_options with the connection's url/user/password), one
# column masked with Map.apply, parquet written to S3; bookmarked on the table's primary key.
# Only the awsglue imports differ from a script Glue would run.
import sys
from sparkmark.glue.transforms import *
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job


def hide_content(rec):
    rec["content"] = "*" * len(rec["content"])
    return rec


args = getResolvedOptions(sys.argv, ["JOB_NAME", "CONNECTION_NAME", "DATABASE_NAME",
                                     "TABLE_NAME", "OUTPUT_BUCKET", "OUTPUT_PATH"])
glueContext = GlueContext(SparkContext())
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

conf = glueContext.extract_jdbc_conf(connection_name=args["CONNECTION_NAME"])
options = {
    "url": "{}/{}".format(conf["url"], args["DATABASE_NAME"]),
    "user": conf["user"],
    "password": conf["password"],
    "dbtable": args["TABLE_NAME"],
    "hashfield": "id",
}
frame = glueContext.create_dynamic_frame.from_options(
    connection_type=conf["vendor"], connection_options=options, transformation_ctx="bookmark")
frame = Map.apply(frame=frame, f=hide_content)
glueContext.write_dynamic_frame.from_options(
    frame=frame, connection_type="s3", format="parquet",
    connection_options={"path": "s3://{}/{}".format(args["OUTPUT_BUCKET"], args["OUTPUT_PATH"])})
job.commit()
