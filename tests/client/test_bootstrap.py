"""Bootstrapping: ``parse_bootstrap``, host lists whose first entries are unreachable, and a clear,
bounded failure when no entry can be reached."""

import random

import pytest

from broker.client import (
    BrokerConnection,
    BrokerConnectionError,
    BrokerUnavailableError,
    KafkaClient,
    KafkaError,
    NewTopic,
    parse_bootstrap,
)

from .support import closed_port

EXAMPLE = "for example 127.0.0.1:9092"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("127.0.0.1:9092", [("127.0.0.1", 9092)]),
        ("h1:9092,h2:9093", [("h1", 9092), ("h2", 9093)]),
        ("  h1:9092 ,  h2:9093  ", [("h1", 9092), ("h2", 9093)]),
        ("h1:9092, h2:9093,\th3:1", [("h1", 9092), ("h2", 9093), ("h3", 1)]),
        ("[::1]:9092", [("::1", 9092)]),
        ("localhost:65535", [("localhost", 65535)]),
        # a listener name before the address, as Kafka's clients ignore it
        ("PLAINTEXT://h1:9092,SASL_SSL://[::1]:9093", [("h1", 9092), ("::1", 9093)]),
    ],
)
def test_parse_bootstrap_accepts(text, expected):
    assert parse_bootstrap(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "host",
        "host:",
        ":9092",
        "host:port",
        "host:0",
        "host:65536",
        "host:-1",
        "host:9092:",
        "h1:9092,",
        "h1:9092,,h2:9092",
        ",h1:9092",
        "host:9O92",
        "host:\u00b2",  # a character str.isdigit() accepts but int() refuses
        "PLAINTEXT://",
        "PLAINTEXT://host",
    ],
)
def test_parse_bootstrap_rejects_with_an_example(text):
    with pytest.raises(ValueError, match=EXAMPLE) as info:
        parse_bootstrap(text)
    assert repr(text) in str(info.value)


def test_parse_bootstrap_does_not_merge_space_separated_entries():
    """A space-separated list is a likely mistake: it must give two servers or be refused, not
    one host called ``'h1:9092 h2'``."""
    try:
        parsed = parse_bootstrap("h1:9092 h2:9092")
    except ValueError as exc:
        assert EXAMPLE in str(exc)
    else:
        assert parsed == [("h1", 9092), ("h2", 9092)]


def test_client_refuses_a_malformed_list_before_connecting():
    with pytest.raises(ValueError, match=EXAMPLE):
        KafkaClient("not-a-host-port")


@pytest.fixture
def in_given_order(monkeypatch):
    """Make the client try the bootstrap entries in the order given (it shuffles them)."""
    monkeypatch.setattr(random, "sample", lambda seq, k: list(seq)[:k])


def test_bootstrap_skips_unreachable_entries(cluster, in_given_order):
    first_real = cluster.bootstrap.split(",")[0]
    servers = f"127.0.0.1:{closed_port()}, 127.0.0.1:{closed_port()} ,{first_real}"
    with KafkaClient(servers, timeout=5, retries=0) as client:
        metadata = client.metadata()
    advertised = {f"{b.host}:{b.port}" for b in metadata.brokers.values()}
    assert advertised == set(cluster.bootstrap.split(","))


def test_bootstrap_in_any_order_finds_the_working_entry(cluster):
    servers = ",".join([f"127.0.0.1:{closed_port()}" for _ in range(3)] + [cluster.bootstrap.split(",")[-1]])
    for _ in range(5):  # the client shuffles the list: every order must work, first try
        with KafkaClient(servers, timeout=5, retries=0) as client:
            assert client.metadata().brokers


def test_all_unreachable_fails_fast_naming_every_address():
    addresses = [f"127.0.0.1:{closed_port()}" for _ in range(3)]
    with KafkaClient(",".join(addresses), timeout=5, retries=2, retry_backoff_ms=20) as client:
        with pytest.raises(KafkaError) as info:
            client.metadata()
    message = str(info.value)
    assert "after 3 attempts" in message and "could be reached" in message
    for address in addresses:
        assert address in message


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.partitions_of("t"),
        lambda c: c.topics(),
        lambda c: c.fetch("t", 0, 0, 1024),
        lambda c: c.list_offsets({("t", 0): -1}),
        lambda c: c.produce("t", 0, [(None, b"v")]),
        lambda c: c.produce("t", 0, [(None, b"v")], acks=0),
        lambda c: c.create_topics([NewTopic("t")]),
        lambda c: c.delete_topics(["t"]),
        lambda c: c.describe_configs("t"),
        lambda c: c.partition_sizes("t", [0]),
    ],
)
def test_every_call_fails_cleanly_when_nothing_is_reachable(call):
    address = f"127.0.0.1:{closed_port()}"
    with KafkaClient(address, timeout=5, retries=1, retry_backoff_ms=10) as client:
        with pytest.raises(BrokerUnavailableError, match=address):
            call(client)


def test_connection_to_a_closed_port_names_the_address():
    port = closed_port()
    with pytest.raises(BrokerConnectionError, match=f"cannot connect to 127.0.0.1:{port}"):
        BrokerConnection("127.0.0.1", port, timeout=5)
