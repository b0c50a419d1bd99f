"""Spark tests: one shared local SparkSession (pytest-spark's ``spark_session``, configured in
setup.cfg), whose Python workers run this interpreter so they can import the project."""

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark(spark_session):
    spark_session.sparkContext.setLogLevel("ERROR")
    return spark_session
