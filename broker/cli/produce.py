"""``kafkalog produce TOPIC``: send the lines of stdin or a file as records (optionally ``key<SEP>value``),
batched per partition, with the compression and acks asked for.

Records go to ``--partition``, or by key as Kafka's producers place them (murmur2), or, without a
key, to one partition at a time, moving on after each full batch. What has been read is sent as
soon as the input pauses, so lines typed or piped slowly are not held back.
"""

import os
import select
import sys

from broker.client.partitioner import partition_for_key
from broker.records.compression import Codec

from .common import OK, USAGE, CommandError, add_command, check_partition, non_negative_int, partitions_of, run
from .progress import Progress

PROG = "kafkalog produce"
BATCH_BYTES = 512 * 1024  # per batch, well under the default max.message.bytes (1 MiB) even uncompressed
RECORD_OVERHEAD = 16  # the framing of one record in a batch, about
LINGER_SECONDS = 0.1  # input quiet for this long: send what was read
READ_SIZE = 64 * 1024
ACKS = {"0": 0, "1": 1, "all": -1, "-1": -1}


class LineReader:
    """The lines of a file descriptor without their line ends (``\\n`` or ``\\r\\n``), counting the bytes
    read; ``when_idle()`` is called whenever the input has had nothing new for LINGER_SECONDS."""

    def __init__(self, fd: int, when_idle):
        self.fd, self.when_idle = fd, when_idle
        self.bytes_read = 0

    def __iter__(self):
        parts = []
        while True:
            if not select.select([self.fd], [], [], LINGER_SECONDS)[0]:
                self.when_idle()
                select.select([self.fd], [], [])
            chunk = os.read(self.fd, READ_SIZE)
            if not chunk:
                break
            self.bytes_read += len(chunk)
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                parts.append(chunk[start:end])
                yield _without_cr(b"".join(parts))
                parts, start = [], end + 1
            parts.append(chunk[start:])
        if any(parts):
            yield _without_cr(b"".join(parts))


def _without_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


class Batcher:
    """One pending batch per partition; a batch is sent when full, and every one on ``flush``."""

    def __init__(self, client, topic: str, partitions: list[int], fixed_partition: int | None, codec: Codec,
                 acks: int):
        self.client, self.topic, self.partitions = client, topic, partitions
        self.fixed_partition, self.codec, self.acks = fixed_partition, codec, acks
        self.pending = {p: [] for p in partitions}
        self.pending_bytes = dict.fromkeys(partitions, 0)
        self.unkeyed_partition = partitions[0]
        self.sent = 0

    def add(self, key: bytes | None, value: bytes) -> None:
        if self.fixed_partition is not None:
            partition = self.fixed_partition
        elif key is not None:
            partition = partition_for_key(key, len(self.partitions))
        else:
            partition = self.unkeyed_partition
        self.pending[partition].append((key, value))
        self.pending_bytes[partition] += len(value) + (len(key) if key else 0) + RECORD_OVERHEAD
        if self.pending_bytes[partition] >= BATCH_BYTES:
            self._send(partition)
            if partition == self.unkeyed_partition:
                self.unkeyed_partition = self.partitions[(self.partitions.index(partition) + 1) % len(self.partitions)]

    def _send(self, partition: int) -> None:
        records = self.pending[partition]
        if records:
            self.client.produce(self.topic, partition, records, self.codec, self.acks)
            self.sent += len(records)
            self.pending[partition], self.pending_bytes[partition] = [], 0

    def flush(self) -> None:
        for partition in self.partitions:
            self._send(partition)


def _produce(client, args, source, total_bytes: int | None) -> int:
    partitions = partitions_of(client, args.topic, args.bootstrap_server)
    if args.partition is not None:
        check_partition(args.topic, args.partition, partitions)
    batcher = Batcher(client, args.topic, partitions, args.partition, Codec.from_name(args.compression),
                      ACKS[args.acks])
    reader = LineReader(source.fileno(), batcher.flush)
    show_progress = args.progress or (args.file is not None and sys.stderr.isatty())
    progress = Progress(total_bytes) if show_progress else None
    separator = args.key_separator.encode() if args.key_separator is not None else None
    records = 0
    for number, line in enumerate(reader, 1):
        key, value = None, line
        if separator is not None:
            key, found, value = line.partition(separator)
            if not found:
                batcher.flush()
                raise CommandError(f"line {number} has no key separator {args.key_separator!r} "
                                   f"(the {batcher.sent} records before it were sent)")
        batcher.add(key, value)
        records += 1
        if progress:
            progress.update(reader.bytes_read, records)
    batcher.flush()
    if progress:
        progress.finish(reader.bytes_read, records)
    return OK


def _run(args) -> int:
    if args.key_separator == "":
        print(f"{PROG}: --key-separator cannot be empty (for example --key-separator :)", file=sys.stderr)
        return USAGE
    if args.file is None:
        if sys.stdin is None:
            print(f"{PROG}: stdin is closed: give the lines on stdin or with --file PATH", file=sys.stderr)
            return USAGE
        return run(PROG, args, lambda client, args: _produce(client, args, sys.stdin, None))
    try:
        source = open(args.file, "rb")
    except OSError as exc:
        print(f"{PROG}: --file {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE
    with source:
        size = os.fstat(source.fileno()).st_size
        return run(PROG, args, lambda client, args: _produce(client, args, source, size or None))


def add_parser(commands) -> None:
    parser = add_command(
        commands, "produce", "send lines of stdin or a file as records",
        "Send each line of stdin (or of --file) as one record of TOPIC (which must exist), its value\n"
        "the line without its line end. With --key-separator, the text before the first separator is\n"
        "the key. Lines go out in batches (one per partition at a time), sent when full or when the\n"
        "input pauses. Records go to --partition, else by key (murmur2, as Kafka's producers), else\n"
        "to one partition at a time. A progress line is shown on stderr for a file when stderr is a\n"
        "terminal (or with --progress).", [
            "kafkalog produce page-views < views.txt",
            "kafkalog produce page-views --file views.txt --compression zstd --acks all",
            "printf 'user1:clicked\\nuser2:left\\n' | kafkalog produce events --key-separator :",
            "kafkalog produce events --partition 2 --acks 0 --file events.log --progress"])
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--file", metavar="PATH", help="read lines from this file instead of stdin")
    parser.add_argument("--key-separator", metavar="SEP",
                        help="split each line at the first SEP into key and value (a line without it is an error)")
    parser.add_argument("--partition", type=non_negative_int, metavar="N", help="send every record to partition N")
    parser.add_argument("--compression", choices=[c.name.lower() for c in Codec], default="none",
                        help="compression codec of the batches (default none)")
    parser.add_argument("--acks", choices=("0", "1", "all", "-1"), default="1",
                        help="0: do not wait for the broker; 1: for the leader (default); all (-1): for every replica")
    parser.add_argument("--progress", action="store_true",
                        help="show progress on stderr even when it is not a terminal (and for stdin)")
    parser.set_defaults(func=_run)
