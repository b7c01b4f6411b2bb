import sys
from sparkmark.glue.transforms import *
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'database'])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session

conf = glueContext.extract_jdbc_conf("pg-shop")
url = conf["url"] + "/" + args["database"]

# the region list, read in full with a hash-partitioned plain read (before job.init)
regions = glueContext.create_dynamic_frame.from_options(connection_type="postgresql", connection_options={
    "url": url, "user": conf["user"], "password": conf["password"], "dbtable": "regions",
    "hashfield": "name", "hashpartitions": "3"})

job = Job(glueContext)
job.init(args['JOB_NAME'], args)

orders = glueContext.create_dynamic_frame.from_options(connection_type="postgresql", connection_options={
    "url": url, "user": conf["user"], "password": conf["password"], "dbtable": "orders",
    "jobBookmarkKeys": ["id"], "jobBookmarkKeysSortOrder": "asc",
    "hashfield": "id", "hashpartitions": "4"}, transformation_ctx="orders")
customers = glueContext.create_dynamic_frame.from_catalog(database="shop", table_name="customers", transformation_ctx="customers")

with_region = Join.apply(orders, regions, "region_id", "region_key").drop_fields(["region_key"])
glueContext.write_dynamic_frame.from_jdbc_conf(frame=with_region, catalog_connection="pg-shop",
                                               connection_options={"dbtable": "orders_copy", "database": args["database"]},
                                               redshift_tmp_dir=args["TempDir"], transformation_ctx="orders_sink")
glueContext.write_dynamic_frame.from_options(frame=customers, connection_type="postgresql",
                                             connection_options={"connectionName": "pg-shop", "useConnectionProperties": "true",
                                                                 "url": url, "dbtable": "customers_copy"},
                                             transformation_ctx="customers_sink")
job.commit()
