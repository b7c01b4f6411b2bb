import sys
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.dynamicframe import DynamicFrame
from sparkmark.glue.job import Job
from pyspark.sql.functions import udf
from pyspark.sql.types import StringType

args = getResolvedOptions(sys.argv, ['JOB_NAME'])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args['JOB_NAME'], args)

db_name = "payments"
tbl_name = "medicare"
out = "s3://out/medicare"

# "provider id" holds numbers and some text: a choice type in Glue, strings here
medicare_dyf = glueContext.create_dynamic_frame.from_catalog(database = db_name, table_name = tbl_name, transformation_ctx = "medicare")

medicare_cols = medicare_dyf.resolveChoice(specs = [('provider id', 'make_cols')])
medicare_struct = medicare_dyf.resolveChoice(specs = [('provider id', 'make_struct')])
medicare_res = medicare_dyf.resolveChoice(specs = [('provider id', 'cast:long')])

medicare_df = medicare_res.toDF()
medicare_df = medicare_df.where("`provider id` is NOT NULL")
chop_f = udf(lambda x: x[1:], StringType())
medicare_df = medicare_df.withColumn("ACC", chop_f(medicare_df["average covered charges"]))
medicare_tmp = DynamicFrame.fromDF(medicare_df, glueContext, "nested")
medicare_nest = medicare_tmp.apply_mapping([('drg definition', 'string', 'drg', 'string'),
                                            ('provider id', 'long', 'provider.id', 'long'),
                                            ('provider name', 'string', 'provider.name', 'string'),
                                            ('ACC', 'string', 'charges.covered', 'double')])

glueContext.write_dynamic_frame.from_options(frame = medicare_nest, connection_type = "s3", connection_options = {"path": out + "/nested"}, format = "json", transformation_ctx = "nested_sink")
glueContext.write_dynamic_frame.from_options(frame = medicare_cols, connection_type = "s3", connection_options = {"path": out + "/make_cols"}, format = "json", transformation_ctx = "cols_sink")
glueContext.write_dynamic_frame.from_options(frame = medicare_struct, connection_type = "s3", connection_options = {"path": out + "/make_struct"}, format = "json", transformation_ctx = "struct_sink")
job.commit()
