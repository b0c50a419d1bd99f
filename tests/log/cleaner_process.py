"""A process that cleans a compacted log and SIGKILLs itself at one step of the cleaning.

``python -m tests.log.cleaner_process LOG_DIR STEP``: opens ``LOG_DIR/topic-0`` (see
``cleaning.compacted_config``) and runs cleaning passes; at STEP it kills itself with SIGKILL, a
real kill at an exact point that a kill from outside could only hit by chance:

* ``writing``: the second batch written to a ``.cleaned`` segment
* ``cleaned``: a ``.cleaned`` segment complete and fsynced, before its rename to ``.swap``
* ``swap``: the ``.swap`` complete, before the log's segments are touched
* ``replacing``: one replaced segment renamed ``.deleted``, the others not yet
* ``swapped``: the swap complete, before the first dirty offset is checkpointed
* ``none``: no kill; prints ``done`` when nothing is left to clean
"""

import os
import signal
import sys

from broker.log import cleaner_manager, segment
from broker.log.partition_log import PartitionLog
from broker.log.segment import SWAP_SUFFIX, LogSegment
from tests.log.cleaning import clean_to_the_end, compacted_config


def kill_when(cls, name: str, should_kill) -> None:
    """Wrap ``cls.name`` so that the process dies when ``should_kill(*args)`` says so at a call."""
    original = getattr(cls, name)

    def wrapper(*args, **kwargs):
        if should_kill(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)

    setattr(cls, name, wrapper)


def countdown(n: int):
    calls = [0]

    def nth(*_args, **_kwargs) -> bool:
        calls[0] += 1
        return calls[0] == n

    return nth


def main() -> None:
    log_dir, step = sys.argv[1], sys.argv[2]
    if step == "writing":
        appends = countdown(2)
        kill_when(LogSegment, "append", lambda seg, *_: seg.suffix == segment.CLEANED_SUFFIX and appends())
    elif step == "cleaned":
        kill_when(LogSegment, "change_suffix", lambda seg, suffix: suffix == SWAP_SUFFIX)
    elif step == "swap":
        kill_when(PartitionLog, "replace_segments", lambda *_: True)
    elif step == "replacing":
        kill_when(LogSegment, "rename_for_deletion", countdown(2))
    elif step == "swapped":
        kill_when(cleaner_manager.LogCleanerManager, "done_cleaning", lambda *_: True)
    log = PartitionLog.open(os.path.join(log_dir, "topic-0"), compacted_config(segment_bytes=8192))
    clean_to_the_end(log, log_dir)
    print("done", flush=True)


if __name__ == "__main__":
    main()
