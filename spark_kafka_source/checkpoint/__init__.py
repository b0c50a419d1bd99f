"""Checkpoints of Hadoop-style loads on local files (pyarrow) or any filesystem Spark's Hadoop
configuration reaches (HDFS, viewfs, object stores): ``location`` (atomic writes, and which
implementation a URI gets), ``hadoop_location`` (through the Spark driver's JVM), ``store`` (the
layout of numbered runs), ``lock`` (one run at a time)."""

from .location import ArrowLocation, CheckpointError, Location, is_local, open_location, to_uri
from .lock import CheckpointLock, LockHeldError
from .store import CheckpointStore, PartitionPlan, Run, TaskCheckpoint, write_task_checkpoint

__all__ = [
    "ArrowLocation",
    "CheckpointError",
    "CheckpointLock",
    "CheckpointStore",
    "Location",
    "is_local",
    "open_location",
    "LockHeldError",
    "PartitionPlan",
    "Run",
    "TaskCheckpoint",
    "to_uri",
    "write_task_checkpoint",
]
