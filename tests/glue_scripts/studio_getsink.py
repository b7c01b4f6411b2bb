import sys
from sparkmark.glue.transforms import *
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job

args = getResolvedOptions(sys.argv, ["JOB_NAME"])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
job = Job(glueContext)
job.init(args["JOB_NAME"], args)

# Script generated for node Amazon S3
AmazonS3_node1700000000001 = glueContext.create_dynamic_frame.from_options(
    format_options={"multiline": False},
    connection_type="s3",
    format="json",
    connection_options={"paths": ["s3://lake/events/"], "recurse": True},
    transformation_ctx="AmazonS3_node1700000000001",
)

# Script generated for node Change Schema
ChangeSchema_node1700000000002 = ApplyMapping.apply(
    frame=AmazonS3_node1700000000001,
    mappings=[
        ("event_id", "string", "event_id", "string"),
        ("user", "string", "user_name", "string"),
        ("value", "long", "value", "int"),
        ("day", "string", "day", "string"),
    ],
    transformation_ctx="ChangeSchema_node1700000000002",
)

# Script generated for node Amazon S3
AmazonS3_node1700000000003 = glueContext.getSink(
    path="s3://out/events/",
    connection_type="s3",
    updateBehavior="UPDATE_IN_DATABASE",
    partitionKeys=["day"],
    enableUpdateCatalog=True,
    transformation_ctx="AmazonS3_node1700000000003",
)
AmazonS3_node1700000000003.setCatalogInfo(
    catalogDatabase="analytics", catalogTableName="events"
)
AmazonS3_node1700000000003.setFormat("glueparquet", compression="snappy")
AmazonS3_node1700000000003.writeFrame(ChangeSchema_node1700000000002)
job.commit()
