import sys
from sparkmark.glue.transforms import *
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.dynamicframe import DynamicFrame

glueContext = GlueContext(SparkContext.getOrCreate())

db_name = "payments"
tbl_name = "transfers_csv"
output_dir = "s3://out/transfers_parquet"

transfers = glueContext.create_dynamic_frame.from_catalog(database = db_name, table_name = tbl_name)
print("Count: ", transfers.count())
transfers.printSchema()
typed = transfers.resolveChoice(specs = [('amount', 'cast:double')])
glueContext.write_dynamic_frame.from_options(frame = typed, connection_type = "s3", connection_options = {"path": output_dir}, format = "parquet")
