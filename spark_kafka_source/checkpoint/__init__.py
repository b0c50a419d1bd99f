"""Checkpoints of Hadoop-style loads on any filesystem pyarrow reaches (local files by default,
HDFS, object stores): ``location`` (atomic writes), ``store`` (the layout of numbered runs),
``lock`` (one run at a time)."""

from .location import CheckpointError, Location, to_uri
from .lock import CheckpointLock, LockHeldError
from .store import CheckpointStore, PartitionPlan, Run, TaskCheckpoint, write_task_checkpoint

__all__ = [
    "CheckpointError",
    "CheckpointLock",
    "CheckpointStore",
    "Location",
    "LockHeldError",
    "PartitionPlan",
    "Run",
    "TaskCheckpoint",
    "to_uri",
    "write_task_checkpoint",
]
