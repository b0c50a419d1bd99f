"""Errors whose one-line message says all a user needs (a bad option, data loss, an unreachable
broker, refused credentials or an untrusted certificate, an unsupported mode, a DataFrame the sink
cannot write), reported by Spark's Python worker without a traceback."""

import os
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import TypeVar

from broker.client import AuthenticationError, BrokerConnectionError, KafkaError

from .options import OptionError
from .planning import DataLossError
from .writing import SinkError


class UnsupportedModeError(RuntimeError):
    """Something the data source does not do (a save mode other than append)."""


EXPLAINED_ERRORS = (
    OptionError,
    DataLossError,
    KafkaError,
    BrokerConnectionError,
    AuthenticationError,
    UnsupportedModeError,
    SinkError,
)


class explained:
    """Around work Spark runs in a Python worker: an error of ``EXPLAINED_ERRORS`` is reported as its
    one line, without the traceback. Spark formats the error after our code returns, hiding the
    traceback when ``SPARK_HIDE_TRACEBACK`` is set (what ``spark.sql.pyspark.hideTraceback.enabled``
    sets); the worker exits after reporting an error, so the setting ends with it. Outside a Spark
    worker nothing is changed."""

    def __enter__(self) -> "explained":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if isinstance(error, EXPLAINED_ERRORS) and os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER":
            os.environ["SPARK_HIDE_TRACEBACK"] = "1"


Batch = TypeVar("Batch")


def explained_batches(batches: Iterable[Batch]) -> Iterator[Batch]:
    """``batches``, with an error raised while reading them reported as in ``explained``."""
    with explained():
        yield from batches
