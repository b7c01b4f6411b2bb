import sys
from sparkmark.glue.transforms import *
from sparkmark.glue.utils import getResolvedOptions
from pyspark.context import SparkContext
from sparkmark.glue.context import GlueContext
from sparkmark.glue.job import Job

args = getResolvedOptions(sys.argv, ['JOB_NAME', 'TempDir'])
glueContext = GlueContext(SparkContext.getOrCreate())
job = Job(glueContext)
job.init(args['JOB_NAME'], args)

db_name = "legislators"
output_dir = "s3://out/legislators"

persons = glueContext.create_dynamic_frame.from_catalog(database=db_name, table_name="persons_json", transformation_ctx="persons")
memberships = glueContext.create_dynamic_frame.from_catalog(database=db_name, table_name="memberships_json", transformation_ctx="memberships")
orgs = glueContext.create_dynamic_frame.from_catalog(database=db_name, table_name="organizations_json")  # read in full

orgs = orgs.drop_fields(['classification']).rename_field('id', 'org_id').rename_field('name', 'org_name')

l_history = Join.apply(orgs, Join.apply(persons, memberships, 'id', 'person_id'), 'org_id', 'organization_id').drop_fields(['person_id', 'org_id'])

dfc = l_history.relationalize("hist_root", args['TempDir'])
for df_name in dfc.keys():
    m_df = dfc.select(df_name)
    glueContext.write_dynamic_frame.from_options(frame = m_df, connection_type = "s3", connection_options = {"path": output_dir + "/" + df_name}, format = "json", transformation_ctx = df_name)

job.commit()
