"""The records of one fetch, and how ``kafkalog consume`` prints each: a plain line (partition,
offset, ISO-8601 UTC timestamp, key, value, tab-separated) or a JSON object with the exact bytes."""

import datetime
import json

from broker.arguments import EPOCH
from broker.client import KafkaClient
from broker.records import record_set
from broker.records.batch import DecodedBatch, Record
from broker.records.errors import CorruptRecordError

from .common import CommandError
from .record_text import json_field, json_headers, text

FETCH_BYTES = 1024 * 1024
PLAIN_COLUMNS = ("partition", "offset", "timestamp", "key", "value")
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def fetch_records(
    client: KafkaClient, topic: str, partition: int, position: int, end: int | None, first: int = 0
) -> tuple[list[tuple[DecodedBatch, Record]], int]:
    """The data records of one fetch from ``position`` (none below ``first``, nor at or above ``end``
    if given), and the next position. Under read_committed the records of aborted transactions are
    left out, by a filter of this fetch alone (as Kafka's consumer does: the broker lists again every
    aborted transaction a fetch overlaps)."""
    fetched = client.fetch(topic, partition, position, FETCH_BYTES)
    read_filter = client.read_filter()
    read_filter.add_aborted(fetched.aborted_transactions)
    records, next_position = [], position
    lowest = max(position, first)
    view = fetched.records
    try:
        for pos, header in record_set.iter_entries(view):
            entry_bytes = view[pos : pos + header.size]
            if read_filter.keeps(entry_bytes, header):
                entry = record_set.decode_entry(entry_bytes)
                records += [(entry, r) for r in entry.records if lowest <= r.offset and (end is None or r.offset < end)]
            next_position = max(next_position, header.last_offset + 1)
    except CorruptRecordError as exc:
        raise CommandError(f"{topic}-{partition}: the batch at offset {next_position} is unreadable: {exc}") from None
    return records, next_position


def iso(timestamp: int) -> str:
    """ISO-8601 UTC with milliseconds; "none" for a record without a timestamp (-1)."""
    if timestamp < 0:
        return "none"
    try:
        moment = EPOCH + datetime.timedelta(milliseconds=timestamp)
    except OverflowError:  # past the year 9999: only the number can show it
        return str(timestamp)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_line(topic: str, partition: int, entry: DecodedBatch, record: Record, form: str | tuple[str, ...]) -> str:
    """``form``: "json", "plain" (every column of PLAIN_COLUMNS) or the plain columns to show."""
    if form == "plain":
        return f"{partition}\t{record.offset}\t{iso(record.timestamp)}\t{text(record.key)}\t{text(record.value)}"
    if form != "json":
        cells = {
            "partition": partition,
            "offset": record.offset,
            "timestamp": iso(record.timestamp),
            "key": text(record.key),
            "value": text(record.value),
        }
        return "\t".join(str(cells[column]) for column in form)
    out = {
        "topic": topic,
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestampType": TIMESTAMP_TYPES.get(int(entry.timestamp_type), "NoTimestampType"),
    }
    json_field(out, "key", record.key)
    json_field(out, "value", record.value)
    out["headers"] = json_headers(record.headers)
    return json.dumps(out, ensure_ascii=False)
