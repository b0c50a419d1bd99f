"""``__transaction_state`` records against the bytes Kafka writes (TransactionLogKey/Value)."""

import pytest

from broker.coordinator.transaction_coordinator import replay
from broker.coordinator.transaction_log import (
    TransactionLogError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from broker.coordinator.transaction_metadata import TransactionMetadata, TxnState

KEY = bytes.fromhex("00000003") + b"txn"
ONGOING_V0 = bytes.fromhex(
    "0000"  # version 0
    "00000000000003e8"  # producer id 1000
    "0002"  # epoch 2
    "0000ea60"  # timeout 60000
    "01"  # Ongoing
    "00000001"
    "0001"
    "74"
    "00000002"
    "00000000"
    "00000001"  # [t: 0, 1]
    "0000000000000005"  # last update
    "0000000000000003"  # start
)
EMPTY_V0 = bytes.fromhex("000000000000000003e800000000ea6000ffffffff0000000000000005ffffffffffffffff")
ONGOING_V1 = bytes.fromhex(
    "0001"
    "00000000000003e8"
    "0002"
    "0000ea60"
    "01"
    "02"
    "0274"
    "03"
    "00000000"
    "00000001"
    "00"  # compact [t: 0, 1], the partition's tagged fields
    "0000000000000005"
    "0000000000000003"
    "01"
    "02"
    "02"
    "0002"  # one tagged field: ClientTransactionVersion (tag 2) = 2, skipped
)


def ongoing() -> TransactionMetadata:
    return TransactionMetadata("txn", 1000, 2, 60_000, TxnState.ONGOING, {("t", 0), ("t", 1)}, 3, 5)


def test_key_is_kafkas():
    assert encode_key("txn") == KEY
    assert decode_key(KEY) == "txn"


def test_value_v0_is_kafkas():
    assert encode_value(ongoing()) == ONGOING_V0
    assert decode_value("txn", ONGOING_V0) == ongoing()


def test_empty_state_writes_null_partitions():
    empty = TransactionMetadata("txn", 1000, 0, 60_000, TxnState.EMPTY, set(), -1, 5)
    assert encode_value(empty) == EMPTY_V0
    assert decode_value("txn", EMPTY_V0) == empty


def test_value_v1_is_read_and_written():
    assert decode_value("txn", ONGOING_V1) == ongoing()
    assert decode_value("txn", encode_value(ongoing(), version=1)) == ongoing()


def test_tombstone():
    assert encode_value(None) is None
    assert decode_value("txn", None) is None


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00", "shorter than its version"),
        (bytes.fromhex("0007") + ONGOING_V0[2:], "unknown version 7"),
        (ONGOING_V0[:-3], "v0"),
        (ONGOING_V0 + b"\x00", "1 bytes after the last field"),
        (ONGOING_V0[:16] + b"\x09" + ONGOING_V0[17:], "unknown status 9"),
    ],
)
def test_malformed_values_are_refused(data, message):
    with pytest.raises(TransactionLogError, match=message):
        decode_value("txn", data)


def test_malformed_key_is_refused():
    with pytest.raises(TransactionLogError, match="unknown version 1"):
        decode_key(b"\x00\x01" + KEY[2:])


def test_replay_keeps_the_latest_and_skips_what_is_malformed():
    empty = decode_value("txn", EMPTY_V0)
    records = [
        (KEY, EMPTY_V0),
        (KEY, ONGOING_V0),
        (b"\x00", b"junk"),
        (encode_key("gone"), EMPTY_V0),
        (encode_key("gone"), None),
    ]
    assert replay(records) == {"txn": ongoing()}
    assert empty is not None
