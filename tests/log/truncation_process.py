"""A process that truncates a log and SIGKILLs itself at one step of the truncation.

``python -m tests.log.truncation_process DIRECTORY OFFSET STEP``: opens the log in DIRECTORY (with
``test_truncation.CONFIG``) and truncates it to OFFSET; at STEP it kills itself with SIGKILL, a
real kill at an exact point that a kill from outside could only hit by chance:

* ``first-segment-removed``: the last segment renamed ``.deleted``, the one below it not yet
* ``second-segment-removed``: two segments renamed, the third not yet
* ``cut``: the segment holding OFFSET cut, its indexes not rebuilt
* ``epochs-not-trimmed``: the data truncated, the leader-epoch-checkpoint not yet
"""

import os
import signal
import sys

from broker.log.config import LogConfig
from broker.log.leader_epoch_cache import LeaderEpochFileCache
from broker.log.partition_log import PartitionLog
from broker.log.segment import LogSegment

from .cleaner_process import countdown, kill_when
from .test_truncation import CONFIG


def main() -> None:
    directory, offset, step = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    log = PartitionLog.open(directory, LogConfig(**CONFIG), recovery_point=2**62)
    if step == "first-segment-removed":
        kill_when(LogSegment, "rename_for_deletion", countdown(2))
    elif step == "second-segment-removed":
        kill_when(LogSegment, "rename_for_deletion", countdown(3))
    elif step == "cut":
        kill_when(LogSegment, "recover", lambda *_: True)
    elif step == "epochs-not-trimmed":
        kill_when(LeaderEpochFileCache, "truncate_from_end", lambda *_: True)
    log.truncate_to(offset)
    print("done", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close: as after a crash


if __name__ == "__main__":
    main()
