"""A process that appends to a log directory until killed, printing each acknowledged append.

Used by the crash tests: ``python -m tests.log.writer_process DIR FLUSH_MESSAGES [VALUE_SIZE]``.
Each line on stdout is ``acked FIRST LAST`` and is printed only after ``append`` returned (and,
with flush.messages=1, after the fsync).
"""

import sys

from broker.log.config import LogConfig
from broker.log.manager import LogManager
from tests.log.util import make_batch


def main() -> None:
    directory, flush_messages = sys.argv[1], int(sys.argv[2])
    value_size = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    config = LogConfig(flush_messages=flush_messages, segment_bytes=64 * 1024, index_interval_bytes=512)
    manager = LogManager(directory, config).open()
    log = manager.get_or_create_log("crash", 0)
    print("ready", log.log_end_offset, flush=True)
    n = log.log_end_offset
    while True:
        result = log.append(make_batch(3, n, value_size=value_size))
        n = result.last_offset + 1
        print("acked", result.first_offset, result.last_offset, flush=True)


if __name__ == "__main__":
    main()
