"""Several listeners at once: each serves the Kafka protocol, and Metadata advertises the listener
the request came in on (or its ``advertised.listeners`` entry), as Kafka does."""

from confluent_kafka.admin import AdminClient


def metadata_brokers(bootstrap: str) -> list[tuple[str, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return [(b.host, b.port) for b in admin.list_topics(timeout=10).brokers.values()]


def test_each_listener_advertises_itself(start_broker):
    broker = start_broker({"listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0,REPLICATION://127.0.0.1:0",
                           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
                                                             "REPLICATION:PLAINTEXT",
                           "advertised.listeners": "REPLICATION://replica.example:19094"})
    assert len(set(broker.ports)) == 3
    assert metadata_brokers(broker.bootstrap_of(0)) == [("127.0.0.1", broker.ports[0])]
    assert metadata_brokers(broker.bootstrap_of(1)) == [("127.0.0.1", broker.ports[1])]
    assert metadata_brokers(broker.bootstrap_of(2)) == [("replica.example", 19094)]
