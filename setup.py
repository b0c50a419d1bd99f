"""Only declares the optional C extension; all other metadata lives in setup.cfg.

``optional=True``: if the extension does not compile, installation still succeeds and
spark_kafka_source.arrow_records falls back to its pure-Python path.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "spark_kafka_source._fastdecode",
            sources=["spark_kafka_source/_fastdecode.c"],
            optional=True,
        )
    ]
)
