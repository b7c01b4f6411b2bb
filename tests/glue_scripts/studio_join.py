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

# Script generated for node Orders
Orders_node1 = glueContext.create_dynamic_frame.from_catalog(
    database="shop", table_name="orders_json", transformation_ctx="Orders_node1"
)

# Script generated for node Customers
Customers_node2 = glueContext.create_dynamic_frame.from_catalog(
    database="shop", table_name="customers_json", transformation_ctx="Customers_node2"
)

# Script generated for node Renamed keys for Join
RenamedkeysforJoin_node3 = ApplyMapping.apply(
    frame=Customers_node2,
    mappings=[("id", "long", "c_id", "long"), ("name", "string", "c_name", "string")],
    transformation_ctx="RenamedkeysforJoin_node3",
)

# Script generated for node Join
Join_node4 = Join.apply(
    frame1=Orders_node1,
    frame2=RenamedkeysforJoin_node3,
    keys1=["customer_id"],
    keys2=["c_id"],
    transformation_ctx="Join_node4",
)

# Script generated for node Drop Fields
DropFields_node5 = DropFields.apply(
    frame=Join_node4, paths=["c_id"], transformation_ctx="DropFields_node5"
)

# Script generated for node Amazon S3
AmazonS3_node6 = glueContext.write_dynamic_frame.from_options(
    frame=DropFields_node5,
    connection_type="s3",
    format="csv",
    connection_options={"path": "s3://out/order_customers/", "partitionKeys": []},
    transformation_ctx="AmazonS3_node6",
)

job.commit()
