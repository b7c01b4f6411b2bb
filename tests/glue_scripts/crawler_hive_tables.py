import json
import os
import sys
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job

# Tables a Glue crawler made (here: Hive tables in the Spark catalog, a Derby metastore):
# delimited text with a header line, partitioned by dt, and Parquet.  Two runs of the job in
# one process (one JVM), with new files landing in between; prints what each run read, as
# JSON, on its last line.
args = getResolvedOptions(sys.argv, ['JOB_NAME', 'lake'])
sc = SparkContext()
glueContext = GlueContext(sc)
spark = glueContext.spark_session
lake = args['lake']
spark.sql("CREATE DATABASE IF NOT EXISTS crawl")
spark.sql(f"""CREATE EXTERNAL TABLE IF NOT EXISTS crawl.orders (id bigint, name string)
PARTITIONED BY (dt string) ROW FORMAT DELIMITED FIELDS TERMINATED BY ','
STORED AS TEXTFILE LOCATION '{lake}/orders' TBLPROPERTIES ('skip.header.line.count'='1')""")
spark.sql(f"""CREATE EXTERNAL TABLE IF NOT EXISTS crawl.events (id bigint, kind string)
STORED AS PARQUET LOCATION '{lake}/events'""")


def run() -> dict:
    job = Job(glueContext)
    job.init(args['JOB_NAME'], args)
    orders = glueContext.create_dynamic_frame.from_catalog(
        database="crawl", table_name="orders", transformation_ctx="orders").toDF()
    events = glueContext.create_dynamic_frame.from_catalog(
        database="crawl", table_name="events", transformation_ctx="events").toDF()
    got = {"orders": sorted([r["id"], r["name"], r["dt"]] for r in orders.collect()),
           "orders_types": [(f.name, f.dataType.simpleString()) for f in orders.schema.fields],
           "events": sorted([r["id"], r["kind"]] for r in events.collect())}
    job.commit()
    return got


first = run()
os.makedirs(f"{lake}/orders/dt=2024-01-02")
with open(f"{lake}/orders/dt=2024-01-02/b.csv", "w") as f:
    f.write("id,name\n3,cy\n")
spark.createDataFrame([(11, "view")], "id bigint, kind string").coalesce(1) \
    .write.mode("append").parquet(f"{lake}/events")
second = run()
try:  # a write to a Hive table is refused: its metastore would not list the files
    glueContext.write_dynamic_frame.from_catalog(
        frame=glueContext.create_dynamic_frame.from_catalog(database="crawl", table_name="events"),
        database="crawl", table_name="events")
    refused = ""
except Exception as e:  # noqa: BLE001
    refused = str(e)
print(json.dumps([first, second, refused]))
