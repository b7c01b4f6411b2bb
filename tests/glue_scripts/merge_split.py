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

accounts = glueContext.create_dynamic_frame.from_options("s3", {"paths": ["s3://lake/accounts/"]}, format="json", transformation_ctx="accounts")
corrections = glueContext.create_dynamic_frame.from_options("s3", {"paths": ["s3://lake/corrections/"]}, format="json", transformation_ctx="corrections")

merged = accounts.mergeDynamicFrame(corrections, ["account_id"], transformation_ctx="merged")

by_size = SplitRows.apply(frame=merged, comparison_dict={"balance": {">=": 1000}}, name1="big", name2="small", transformation_ctx="by_size")
for name in by_size.keys():
    part = SelectFromCollection.apply(dfc=by_size, key=name, transformation_ctx=name)
    glueContext.write_dynamic_frame.from_options(frame=part, connection_type="s3", connection_options={"path": "s3://out/accounts/" + name}, format="json", transformation_ctx="sink_" + name)

money = SplitFields.apply(frame=merged, paths=["account_id", "balance"], name1="money", name2="other", transformation_ctx="money")
glueContext.write_dynamic_frame.from_options(frame=money.select("money"), connection_type="s3", connection_options={"path": "s3://out/accounts/money"}, format="csv", transformation_ctx="sink_money")
job.commit()
