"""Only declares the optional C extensions; all other metadata lives in setup.cfg.

``optional=True``: if an extension does not compile, installation still succeeds and its
pure-Python counterpart is used (spark_kafka_source.arrow_records decodes in Python,
broker.records.crc checks CRC-32C with crcmod, broker.records.record_check decodes records
in Python).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "spark_kafka_source._fastdecode",
            sources=["spark_kafka_source/_fastdecode.c"],
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
            optional=True,
        ),
    ]
)
