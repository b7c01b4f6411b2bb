"""Hand-written job: keep the good events, derive a field per record, write JSON."""
import sys

from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job
from sparkmark.glue.transforms import Filter, Map
from sparkmark.glue.utils import getResolvedOptions

args = getResolvedOptions(sys.argv, ["JOB_NAME", "input_path", "output_path"])

sc = SparkContext.getOrCreate()
glue_context = GlueContext(sc)
logger = glue_context.get_logger()
job = Job(glue_context)
job.init(args["JOB_NAME"], args)

events = glue_context.create_dynamic_frame.from_options(
    connection_type="s3",
    connection_options={"paths": [args["input_path"]], "recurse": True},
    format="json",
    transformation_ctx="events",
)
logger.info("read %d events" % events.count())

ok_events = Filter.apply(frame=events, f=lambda rec: rec["status"] == "ok" and rec["amount"] > 0)


def to_cents(rec):
    rec["amount_cents"] = int(round(rec["amount"] * 100))
    rec["customer"] = rec["meta"]["customer"].upper()
    del rec["debug"]
    del rec["meta"]
    return rec


priced = Map.apply(frame=ok_events, f=to_cents, transformation_ctx="priced")

glue_context.write_dynamic_frame.from_options(
    frame=priced,
    connection_type="s3",
    connection_options={"path": args["output_path"]},
    format="json",
    transformation_ctx="sink",
)
job.commit()
