"""Several listeners at once: each serves the Kafka protocol, and Metadata advertises the listener
the request came in on (or its ``advertised.listeners`` entry), as Kafka does; so does FindCoordinator."""

from confluent_kafka.admin import AdminClient

from broker.client import BrokerConnection
from broker.protocol.apis import ApiKey


def metadata_brokers(bootstrap: str) -> list[tuple[str, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return [(b.host, b.port) for b in admin.list_topics(timeout=10).brokers.values()]


def test_each_listener_advertises_itself(start_broker):
    broker = start_broker(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0,REPLICATION://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,REPLICATION:PLAINTEXT",
            "advertised.listeners": "REPLICATION://replica.example:19094",
        }
    )
    assert len(set(broker.ports)) == 3
    assert metadata_brokers(broker.bootstrap_of(0)) == [("127.0.0.1", broker.ports[0])]
    assert metadata_brokers(broker.bootstrap_of(1)) == [("127.0.0.1", broker.ports[1])]
    assert metadata_brokers(broker.bootstrap_of(2)) == [("replica.example", 19094)]


def test_find_coordinator_answers_the_requests_listener(start_broker):
    broker = start_broker(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "advertised.listeners": "INTERNAL://internal.example:19093",
        }
    )
    answers = []
    for port in broker.ports:
        connection = BrokerConnection("127.0.0.1", port)
        try:
            response = connection.request(ApiKey.FIND_COORDINATOR, {"key": "loaders", "key_type": 0})
        finally:
            connection.close()
        assert response["error_code"] == 0, response
        answers.append((response["host"], response["port"]))
    assert answers[0] == ("127.0.0.1", broker.ports[0])
    assert answers[1] == ("internal.example", 19093)
