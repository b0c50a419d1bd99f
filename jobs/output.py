"""The output of a series of loads, and how a run's output becomes visible all at once.

Layout under the output URI (Hive-style partition directories, so Spark and Hive find the columns)::

    run=<N>/topic=<topic>/date=<yyyy-mm-dd>/hour=<hh>/part-*.parquet   committed runs
    _staging/run=<N>/...                                               a run being written
    _superseded/run=<N>/...                                            runs a rewind replaced

``date`` and ``hour`` are the UTC event time of each record (its Kafka timestamp). Spark and Hive
skip paths whose name starts with ``_``, so staging and superseded output is never read.

A run is written to ``_staging/run=<N>`` by one Spark job (which writes ``_SUCCESS`` last), then
published by renaming that directory to ``run=<N>``: one atomic rename on local files and HDFS.
A run executed again after a kill therefore replaces its own partial staging output, and never
adds to published output; a rewind moves whole ``run=<N>`` directories aside, again one rename each.
"""

from typing import NamedTuple

import pyarrow as pa
import pyarrow.dataset as ds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, IntegerType, StringType, StructField, StructType

from spark_kafka_source.checkpoint import (
    ArrowLocation,
    CheckpointError,
    Location,
    PartitionPlan,
    TaskCheckpoint,
    open_location,
)
from spark_kafka_source.datasource import source_schema

FORMATS = ("parquet", "orc", "json")
PARTITION_COLUMNS = ("topic", "date", "hour")
SECONDS_PER_DAY = 86_400
PLACES = ("", "_staging/", "_superseded/")  # where a run's output is: published, being written, superseded
HIVE_DIRECTORIES = ds.partitioning(pa.schema([(c, pa.string()) for c in PARTITION_COLUMNS]), flavor="hive")


class LoadedOffsets(NamedTuple):
    """The offsets of one topic partition found in a run's output."""

    first: int
    last: int
    rows: int
    distinct: int

    @property
    def contiguous(self) -> bool:
        """Every offset from first to last, each once."""
        return self.rows == self.distinct == self.last - self.first + 1


def run_dir(number: int) -> str:
    return f"run={number}"


class Output:
    def __init__(self, where: "str | Location", format: str = "parquet") -> None:
        """``where``: a path or URI (opened by ``open_location``), or a location already open."""
        self.location = open_location(where) if isinstance(where, str) else where
        self.uri = self.location.uri
        self.format = format

    def staging_uri(self, number: int) -> str:
        return f"{self.uri}/_staging/{run_dir(number)}"

    def is_published(self, number: int) -> bool:
        return self.location.exists(run_dir(number))

    def is_staged(self, number: int) -> bool:
        """The run's Spark job committed its staging output completely."""
        return self.location.exists(f"_staging/{run_dir(number)}/_SUCCESS")

    def write_staging(self, df: DataFrame, number: int) -> None:
        """Write the records (replacing any partial output of an earlier attempt of the run)."""
        (
            with_event_hour(df)
            .write.mode("overwrite")
            .partitionBy(*PARTITION_COLUMNS)
            .format(self.format)
            .save(self.staging_uri(number))
        )

    def stage_empty(self, number: int) -> None:
        """The staging output of a run with no record to load, as Spark writes it (a directory
        holding only ``_SUCCESS``), without Spark."""
        self.location.delete(f"_staging/{run_dir(number)}")
        self.location.write_bytes(f"_staging/{run_dir(number)}/_SUCCESS", b"")

    def publish(self, number: int) -> None:
        self.location.move(f"_staging/{run_dir(number)}", run_dir(number))

    def set_aside(self, number: int) -> bool:
        """Move a superseded run's output out of the way; True if there was published output."""
        self.location.delete(f"_staging/{run_dir(number)}")
        if not self.is_published(number):
            return False
        self.location.delete(f"_superseded/{run_dir(number)}")
        self.location.move(run_dir(number), f"_superseded/{run_dir(number)}")
        return True

    def delete_superseded(self, number: int) -> None:
        self.location.delete(f"_superseded/{run_dir(number)}")

    def traces(self) -> dict[int, list[str]]:
        """Run number -> where output of that run exists: ``run=N``, ``_staging/run=N``,
        ``_superseded/run=N``."""
        found: dict[int, list[str]] = {}
        for place in PLACES:
            for name in self.location.names(place.rstrip("/")):
                number = name[len("run=") :]
                if name.startswith("run=") and number.isdigit():
                    found.setdefault(int(number), []).append(place + name)
        return found

    def read_tallies(self, spark: SparkSession, number: int, plan: list[PartitionPlan]) -> list[TaskCheckpoint]:
        """What a published run's output holds per planned partition, counted by Spark on the
        driver's behalf: one TaskCheckpoint per partition with records (node: its leader; seconds:
        not measured, 0). For checkpoints Spark's tasks cannot write to (``runner``)."""
        if not any(p.end > p.start for p in plan):
            return []
        rows = (
            _read_run(spark, f"{self.uri}/{run_dir(number)}", self.format)
            .groupBy("topic", "partition")
            .agg(
                F.count("*").alias("records"),
                F.sum(F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))).alias("bytes"),
                F.unix_millis(F.min_by("timestamp", "offset")).alias("first"),
                F.unix_millis(F.max_by("timestamp", "offset")).alias("last"),
            )
            .collect()
        )
        counted = {(row["topic"], row["partition"]): row for row in rows}
        tallies = []
        for p in plan:
            row = counted.get(p.key)
            if row is not None:
                tallies.append(
                    TaskCheckpoint(
                        p.leader,
                        p.topic,
                        p.partition,
                        p.start,
                        p.end,
                        row["records"],
                        row["bytes"] or 0,
                        row["first"],
                        row["last"],
                        0.0,
                    )
                )
        return tallies

    def loaded_offsets(self, place: str) -> dict[tuple, LoadedOffsets]:
        """(topic, partition) -> the offsets in the rows under ``place`` (e.g. ``run=3``), read with
        pyarrow (no Spark): only the partition and offset columns and the topic directories; output
        that only Hadoop's FileSystem reaches is counted by the running Spark session. Unreadable
        rows are an OSError or a ValueError."""
        if not isinstance(self.location, ArrowLocation):
            return self._loaded_offsets_by_spark(place)
        dataset = ds.dataset(
            f"{self.location.path}/{place}",
            filesystem=self.location.fs,
            format=self.format,
            partitioning=HIVE_DIRECTORIES,
        )
        if not dataset.files:
            return {}  # a run that loaded no record
        table = dataset.to_table(columns=["topic", "partition", "offset"])
        counted = table.group_by(["topic", "partition"]).aggregate(
            [("offset", "min"), ("offset", "max"), ("offset", "count"), ("offset", "count_distinct")]
        )
        return {
            (row["topic"], row["partition"]): LoadedOffsets(
                row["offset_min"], row["offset_max"], row["offset_count"], row["offset_count_distinct"]
            )
            for row in counted.to_pylist()
        }

    def _loaded_offsets_by_spark(self, place: str) -> dict[tuple, LoadedOffsets]:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise CheckpointError(f"{self.uri}/{place} is read through Spark, and no Spark session runs")
        try:
            rows = (
                _read_run(spark, f"{self.uri}/{place}", self.format)
                .groupBy("topic", "partition")
                .agg(
                    F.min("offset").alias("first"),
                    F.max("offset").alias("last"),
                    F.count("offset").alias("rows"),
                    F.count_distinct("offset").alias("distinct"),
                )
                .collect()
            )
        except (PySparkException, Py4JError) as exc:
            raise OSError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from None
        return {
            (row["topic"], row["partition"]): LoadedOffsets(row["first"], row["last"], row["rows"], row["distinct"])
            for row in rows
        }


def _read_run(spark: SparkSession, uri: str, format: str) -> DataFrame:
    """The rows of one run's output directory (``run=N`` in any of the places), typed explicitly."""
    return (
        spark.read.schema(StructType([f for f in output_schema().fields if f.name != "run"])).format(format).load(uri)
    )


def with_event_hour(df: DataFrame) -> DataFrame:
    """Add ``date`` and ``hour`` ("00" to "23"), the UTC date and hour of each record's timestamp
    (independent of the session time zone: whole days and hours since the epoch)."""
    seconds = F.unix_seconds(F.col("timestamp"))
    return df.withColumn(
        "date", F.date_add(F.lit("1970-01-01").cast("date"), F.floor(seconds / SECONDS_PER_DAY).cast("int"))
    ).withColumn("hour", F.lpad(F.pmod(F.floor(seconds / 3600), F.lit(24)).cast("string"), 2, "0"))


def output_schema(include_headers: bool = True) -> StructType:
    """The schema of loaded output read back: the source's columns, then the partition columns."""
    data = [f for f in source_schema(include_headers).fields if f.name != "topic"]
    return StructType(
        data
        + [
            StructField("run", IntegerType()),
            StructField("topic", StringType()),
            StructField("date", DateType()),
            StructField("hour", IntegerType()),
        ]
    )


def read_output(spark: SparkSession, uri: str, format: str = "parquet") -> DataFrame:
    """The committed output of a series of loads, with an explicit schema (so a topic named "42"
    stays a string, and an output with no record yet reads as empty)."""
    output = Output(uri, format)
    if not any(name.startswith("run=") for name in output.location.names()):
        return spark.createDataFrame([], output_schema())
    return spark.read.schema(output_schema()).format(format).load(output.uri)
