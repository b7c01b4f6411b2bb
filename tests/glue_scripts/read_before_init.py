"""A hand-written job that loads its lookup table before job.init (as Glue allows)."""
import sys

from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job
from sparkmark.glue.utils import getResolvedOptions

args = getResolvedOptions(sys.argv, ["JOB_NAME"])
glue = GlueContext(SparkContext.getOrCreate())

countries = glue.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": ["s3://lake/countries/"]},
    format="csv",
    format_options={"withHeader": True},
)  # read before the job starts: read in full, every run

job = Job(glue)
job.init(args["JOB_NAME"], args)

sales = glue.create_dynamic_frame.from_catalog(database="shop", table_name="sales", transformation_ctx="sales")
enriched = sales.join(["country"], ["code"], countries).drop_fields(["code"])
glue.write_dynamic_frame.from_options(frame=enriched, connection_type="s3",
                                      connection_options={"path": "s3://out/sales_by_country"},
                                      format="orc", transformation_ctx="sink")
job.commit()
