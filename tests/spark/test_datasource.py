"""The PySpark classes of the source, driven the way Spark drives them but without Spark: ``schema()``
in one worker, the source pickled, ``reader()`` in another; errors Spark reports without a traceback."""

import logging
import os
import pickle

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from spark_kafka_source.datasource import KafkaLogDataSource, UnsupportedModeError, explained
from spark_kafka_source.options import OptionError

OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "events", "maxOffsetsPerTrigger": "10"}


def as_spark_passes(options: dict) -> KafkaLogDataSource:
    """The source as Spark creates it: the options in a case-insensitive dict, names lower-cased."""
    return KafkaLogDataSource(CaseInsensitiveDict({k.lower(): v for k, v in options.items()}))


def test_the_streaming_only_warning_is_logged_once_per_read(caplog):
    caplog.set_level(logging.WARNING)
    source = as_spark_passes(OPTIONS)
    schema = source.schema()
    pickle.loads(pickle.dumps(source)).reader(schema)  # in the planning worker, as Spark does
    warnings = [r for r in caplog.records if "maxOffsetsPerTrigger only applies to streaming" in r.getMessage()]
    assert len(warnings) == 1, caplog.text


def test_a_schema_of_the_users_own_is_refused():
    source = as_spark_passes(OPTIONS)  # Spark does not ask schema() when the user gave one
    with pytest.raises(OptionError, match="fixed schema"):
        source.reader(None)


def test_a_batch_write_that_overwrites_is_refused():
    with pytest.raises(UnsupportedModeError, match=r'save mode overwrite is not supported .*\.mode\("append"\)'):
        as_spark_passes(OPTIONS).writer(None, True)


def test_a_stream_reader_checks_the_options_for_a_stream():
    source = as_spark_passes(OPTIONS)
    source.schema()
    reader = pickle.loads(pickle.dumps(source)).streamReader(None)
    assert reader.options.starting.kind == "latest" and reader.options.limits.max_offsets == 10
    ending = as_spark_passes({**OPTIONS, "endingOffsets": "latest"})
    ending.schema()  # a batch read may end: schema() cannot know yet
    refused = ending.streamReader(None)  # PySpark cannot report an error of streamReader() itself ...
    with pytest.raises(OptionError, match="option endingOffsets: is not valid in a streaming query"):
        refused.getDefaultReadLimit()  # ... so the reader's first call raises it
    with pytest.raises(OptionError, match="fixed schema"):
        as_spark_passes(OPTIONS).streamReader(None).initialOffset()


def test_explained_errors_hide_the_traceback_only_inside_a_spark_worker(monkeypatch):
    monkeypatch.setenv("SPARK_HIDE_TRACEBACK", "")  # unset again at the end (the session's JVM may start later)
    monkeypatch.delenv("SPARK_PYTHON_RUNTIME", raising=False)
    with pytest.raises(OptionError), explained():
        raise OptionError("option x: bad")
    assert os.environ["SPARK_HIDE_TRACEBACK"] == ""
    monkeypatch.setenv("SPARK_PYTHON_RUNTIME", "PYTHON_WORKER")
    with pytest.raises(KeyError), explained():
        raise KeyError("a bug keeps its traceback")
    assert os.environ["SPARK_HIDE_TRACEBACK"] == ""
    with pytest.raises(OptionError), explained():
        raise OptionError("option x: bad")
    assert os.environ["SPARK_HIDE_TRACEBACK"] == "1"
