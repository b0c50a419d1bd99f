"""The ``kafkalog`` Spark data source (to come: options, planning, reading, checkpoints).

Today it holds the Java check that every Spark-using command runs first.
"""
