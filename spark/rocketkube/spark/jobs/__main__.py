"""``spark-submit rocketkube/spark/jobs/__main__.py JOB ...`` (or ``python -m
rocketkube.spark.jobs JOB ...``): the jobs under spark-submit, whose ``--master`` is used
unless the job is given one."""

import sys

from rocketkube.spark.jobs import cli

sys.exit(cli.main(default_master=None))
