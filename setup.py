"""Only declares the optional C extensions; all other metadata lives in setup.cfg.

``optional=True``: if an extension does not compile, installation still succeeds and its
pure-Python counterpart is used (spark_kafka_source.arrow_records decodes in Python,
broker.records.crc checks CRC-32C with crcmod, broker.records.record_check and retain walk
records with broker.records.record_walk). The two record-reading extensions share one C record
walker, broker/records/recordwalk.h.
"""

from setuptools import Extension, setup

RECORD_WALKER_DIR = "broker/records"
RECORD_WALKER = RECORD_WALKER_DIR + "/recordwalk.h"

setup(
    ext_modules=[
        Extension(
            "spark_kafka_source._fastdecode",
            sources=["spark_kafka_source/_fastdecode.c"],
            include_dirs=[RECORD_WALKER_DIR],
            depends=[RECORD_WALKER],
            optional=True,
        ),
        Extension(
            "broker.records._crc32c",
            sources=["broker/records/_crc32c.c"],
            optional=True,
        ),
        Extension(
            "broker.records._recordwalk",
            sources=["broker/records/_recordwalk.c"],
            include_dirs=[RECORD_WALKER_DIR],
            depends=[RECORD_WALKER],
            optional=True,
        ),
    ]
)
