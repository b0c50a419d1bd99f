"""``kafkalog dump-log``: print the batches of segment files, and their indexes, checking every byte.
A partition's ``leader-epoch-checkpoint`` named as a path prints its entries (a malformed one is a problem).

A control batch also shows its control type (COMMIT, ABORT) and, for a transaction marker, the
coordinator epoch; a ``.txnindex`` is printed entry by entry (its aborted transactions).

``dump(paths, ...)`` yields one dict per batch (or index entry) and finally a summary; the CLI
prints them as text lines or as JSON objects. Batches with a bad CRC are reported and the walk
goes on while the framing holds; framing errors (a size running past the end, an unknown magic,
a torn tail) end the walk of that file, as they end Kafka's recovery. A path that cannot be read
(missing, not a regular file or directory, permission denied, an I/O error) raises
DumpUsageError naming it: nothing about its bytes is known, so it is not reported as corruption.
"""

import os
import stat
import struct
from collections.abc import Iterator
from typing import Any

from broker.records import record_set
from broker.records.batch import BatchHeader, ControlType, TimestampType, read_control_record
from broker.records.compression import codec_of
from broker.records.errors import CorruptRecordError

from .errors import InvalidEntryError
from .file_records import EntryHeader, iter_entries
from .index import OffsetIndex, TimeIndex, entries_before_zero_tail
from .leader_epoch_cache import CHECKPOINT_FILE, MalformedEpochCheckpointError, read_checkpoint
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX
from .transaction_index import ENTRY_SIZE, TXN_INDEX_SUFFIX, parse_entries

Item = dict[str, Any]  # one item of the dump, as JSON would hold it


class DumpUsageError(ValueError):
    """A path that cannot be dumped (missing, unreadable, or not a segment file or partition directory)."""


def segment_files(paths: list[str]) -> list[str]:
    """Expand partition directories to their ``.log`` files; check every path is a readable kind."""
    files = []
    for path in paths:
        if stat.S_ISDIR(_stat(path).st_mode):
            files += sorted(os.path.join(path, n) for n in _list_directory(path) if n.endswith(LOG_SUFFIX))
        elif not path.endswith(
            (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        ) and not _is_epoch_checkpoint(path):
            raise DumpUsageError(f"{path}: not a .log, .index, .timeindex, .txnindex or {CHECKPOINT_FILE} file")
        else:
            files.append(path)
    for path in files:
        if not stat.S_ISREG(_stat(path).st_mode):  # a FIFO would block the open, a directory fail the read
            raise DumpUsageError(f"{path}: not a regular file")
    return files


def _is_epoch_checkpoint(path: str) -> bool:
    return os.path.basename(path) == CHECKPOINT_FILE


def _stat(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _list_directory(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: str, exc: OSError) -> DumpUsageError:
    return DumpUsageError(f"{path}: {(exc.strerror or str(exc)).lower()}")


def dump(paths: list[str], records: bool = False, data: bool = False) -> Iterator[tuple[str, Item]]:
    """Yield ``(kind, dict)`` items: per file a "file" item then its "batch", "index", "leaderEpoch"
    and "invalid" items; finally one "summary". With ``records`` a batch lists its records; with ``data`` too,
    each record carries its bytes: ``key``, ``payload`` and ``headers`` (``((key, value), ...)``)."""
    summary: Item = {"files": 0, "validBatches": 0, "invalidBatches": 0, "indexEntries": 0, "invalid": []}
    for path in segment_files(paths):
        summary["files"] += 1
        yield "file", {"file": path}
        try:
            if path.endswith(LOG_SUFFIX):
                yield from _dump_log(path, records, data, summary)
            elif path.endswith(TXN_INDEX_SUFFIX):
                yield from _dump_txn_index(path, summary)
            elif _is_epoch_checkpoint(path):
                yield from _dump_leader_epochs(path, summary)
            else:
                yield from _dump_index(path, summary)
        except OSError as exc:
            raise _unreadable(path, exc) from None
    first = summary["invalid"][0] if summary["invalid"] else None
    summary["firstInvalidFile"] = first and first["file"]
    summary["firstInvalidPosition"] = first and first["position"]
    yield "summary", summary


def _dump_log(path: str, records: bool, data: bool, summary: Item) -> Iterator[tuple[str, Item]]:
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        try:
            for position, header, entry in iter_entries(fd, 0, size):
                item = _describe_entry(path, position, header, entry, records, data)
                if item["crcValid"] and "recordsError" not in item:
                    summary["validBatches"] += 1
                else:
                    summary["invalidBatches"] += 1
                    summary["invalid"].append(
                        {"file": path, "position": position, "reason": item.get("recordsError", "CRC mismatch")}
                    )
                yield "batch", item
        except InvalidEntryError as exc:
            problem = {"file": path, "position": exc.position, "reason": exc.reason}
            summary["invalid"].append(problem)
            yield "invalid", problem
    finally:
        os.close(fd)


def _describe_entry(path: str, position: int, header: EntryHeader, entry: bytes, records: bool, data: bool) -> Item:
    try:
        record_set.validate_entry(entry)
        crc_valid = True
    except CorruptRecordError:
        crc_valid = False
    item = {
        "file": path,
        "position": position,
        "size": header.size,
        "magic": header.magic,
        "baseOffset": getattr(header, "base_offset", None),
        "lastOffset": header.last_offset,
        "count": getattr(header, "records_count", None),
        "compression": _codec_name(header.attributes),
        "timestampType": TimestampType(header.timestamp_type).name,
        "maxTimestamp": header.max_timestamp,
        "crc": header.crc,
        "crcValid": crc_valid,
    }
    if isinstance(header, BatchHeader):  # magic 2
        item.update(
            {
                "partitionLeaderEpoch": header.partition_leader_epoch,
                "producerId": header.producer_id,
                "producerEpoch": header.producer_epoch,
                "baseSequence": header.base_sequence,
                "lastSequence": header.last_sequence,
                "isTransactional": header.is_transactional,
                "isControl": header.is_control,
            }
        )
    if crc_valid:
        try:
            decoded = record_set.decode_entry(entry, verify_crc=False)
        except CorruptRecordError as exc:
            item["recordsError"] = str(exc)
        else:
            if item["baseOffset"] is None:
                item["baseOffset"] = decoded.base_offset
                item["count"] = len(decoded.records)
            if decoded.is_control and decoded.records:
                control = read_control_record(decoded.records[0].key, decoded.records[0].value)
                if control is not None:
                    control_type, coordinator_epoch = control
                    names = {t.value: t.name for t in ControlType}
                    item["controlType"] = names.get(control_type, f"UNKNOWN({control_type})")
                    if coordinator_epoch is not None:
                        item["coordinatorEpoch"] = coordinator_epoch
            if records:
                item["records"] = [
                    {
                        "offset": r.offset,
                        "timestamp": r.timestamp,
                        "keySize": -1 if r.key is None else len(r.key),
                        "valueSize": -1 if r.value is None else len(r.value),
                        "headerKeys": [k for k, _ in r.headers],
                        **({"key": r.key, "payload": r.value, "headers": r.headers} if data else {}),
                    }
                    for r in decoded.records
                ]
    return item


def _codec_name(attributes: int) -> str:
    try:
        return codec_of(attributes).name.lower()
    except CorruptRecordError:
        return f"unknown({attributes & 0x07})"


def _dump_leader_epochs(path: str, summary: Item) -> Iterator[tuple[str, Item]]:
    """The entries of a ``leader-epoch-checkpoint``: each leader epoch and the offset it starts at."""
    try:
        entries = read_checkpoint(path)
    except MalformedEpochCheckpointError as exc:
        problem = {"file": path, "position": 0, "reason": str(exc).removeprefix(f"{path}: ")}
        summary["invalid"].append(problem)
        yield "invalid", problem
        return
    for entry in entries:
        yield "leaderEpoch", {"file": path, "epoch": entry.epoch, "startOffset": entry.start_offset}


def _dump_index(path: str, summary: Item) -> Iterator[tuple[str, Item]]:
    is_time_index = path.endswith(TIME_INDEX_SUFFIX)
    entry = (TimeIndex if is_time_index else OffsetIndex).ENTRY
    base_offset = int(os.path.basename(path).split(".")[0]) if os.path.basename(path)[:20].isdigit() else 0
    with open(path, "rb") as f:
        data = f.read()
    whole = len(data) - len(data) % entry.size
    entries = entries_before_zero_tail(data, whole // entry.size, entry.size)  # not the preallocated zeros
    previous = None
    for position, fields in zip(
        range(0, whole, entry.size), struct.iter_unpack(entry.format, data[: entries * entry.size]), strict=False
    ):
        if is_time_index:
            item = {"file": path, "timestamp": fields[0], "offset": base_offset + fields[1]}
            key = (fields[0], fields[1])
        else:
            item = {"file": path, "offset": base_offset + fields[0], "position": fields[1]}
            key = fields
        if previous is not None and not all(b >= a for a, b in zip(previous, key, strict=True)):
            problem = {"file": path, "position": position, "reason": "index entry out of order"}
            summary["invalid"].append(problem)
            yield "invalid", problem
        previous = key
        summary["indexEntries"] += 1
        yield "index", item
    if whole != len(data):
        problem = {
            "file": path,
            "position": whole,
            "reason": f"{len(data) - whole} trailing bytes are not a whole {entry.size}-byte entry",
        }
        summary["invalid"].append(problem)
        yield "invalid", problem


def _dump_txn_index(path: str, summary: Item) -> Iterator[tuple[str, Item]]:
    with open(path, "rb") as f:
        data = f.read()
    previous = None
    for position, (version, txn) in zip(range(0, len(data), ENTRY_SIZE), parse_entries(data), strict=False):
        reason = None
        if version != 0:
            reason = f"entry version {version}, not 0"
        elif previous is not None and txn.last_offset <= previous:
            reason = "aborted transaction out of order"
        if reason is not None:
            problem = {"file": path, "position": position, "reason": reason}
            summary["invalid"].append(problem)
            yield "invalid", problem
        previous = txn.last_offset
        summary["indexEntries"] += 1
        yield "index", {"file": path, "version": version, **{_camel(k): v for k, v in txn._asdict().items()}}
    trailing = len(data) % ENTRY_SIZE
    if trailing:
        problem = {
            "file": path,
            "position": len(data) - trailing,
            "reason": f"{trailing} trailing bytes are not a whole {ENTRY_SIZE}-byte entry",
        }
        summary["invalid"].append(problem)
        yield "invalid", problem


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def format_text(kind: str, item: Item) -> str:
    """One human-readable line per item, in the spirit of Kafka's DumpLogSegments."""
    if kind == "file":
        return f"Dumping {item['file']}"
    if kind == "batch":
        fields = [
            "baseOffset",
            "lastOffset",
            "count",
            "position",
            "size",
            "magic",
            "compression",
            "timestampType",
            "maxTimestamp",
            "producerId",
            "producerEpoch",
            "baseSequence",
            "partitionLeaderEpoch",
            "isTransactional",
            "isControl",
            "controlType",
            "coordinatorEpoch",
            "crc",
            "crcValid",
        ]
        line = " ".join(f"{f}: {_text(item[f])}" for f in fields if f in item)
        if "recordsError" in item:
            line += f" recordsError: {item['recordsError']}"
        for record in item.get("records", []):
            line += "\n| " + " ".join(f"{k}: {_text(v)}" for k, v in record.items())
        return line
    if kind in ("index", "leaderEpoch"):
        return " ".join(f"{k}: {v}" for k, v in item.items() if k != "file")
    if kind == "invalid":
        return f"INVALID {item['file']} at position {item['position']}: {item['reason']}"
    if kind == "summary":
        verdict = "all bytes valid" if not item["invalid"] else f"{len(item['invalid'])} problem(s) found"
        return (
            f"summary: {item['files']} file(s), {item['validBatches']} valid batch(es), "
            f"{item['invalidBatches']} invalid batch(es), {item['indexEntries']} index entries; {verdict}"
        )
    raise ValueError(kind)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)
