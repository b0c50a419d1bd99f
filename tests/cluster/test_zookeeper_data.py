"""Kafka's ZooKeeper JSON and the ``zookeeper.connect`` string, without a server."""

import json

import pytest

from broker.cluster.zookeeper_data import (
    ZooKeeperConnect,
    broker_registration_json,
    cluster_id_json,
    controller_json,
    parse_cluster_id,
)


def test_the_json_is_kafkas_byte_for_byte():
    assert broker_registration_json("h", 9092, 1700000000000) == (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:9092"],'
        b'"rack":null,"jmx_port":-1,"host":"h","timestamp":"1700000000000","port":9092,"version":5}'
    )
    assert cluster_id_json("abc") == b'{"version":"1","id":"abc"}'
    assert controller_json(2, 1700000000000) == b'{"version":1,"brokerid":2,"timestamp":"1700000000000"}'
    assert parse_cluster_id(cluster_id_json("abc")) == "abc"
    with pytest.raises(ValueError, match="not Kafka's cluster id JSON"):
        parse_cluster_id(json.dumps({"version": "1"}).encode())


def test_a_broker_with_several_listeners_registers_one_endpoint_each_as_kafka_does():
    endpoints = [("INTERNAL", "PLAINTEXT", "INTERNAL://10.0.0.1:9092"), ("EXTERNAL", "SASL_SSL", "EXTERNAL://b1:9093")]
    assert json.loads(broker_registration_json("10.0.0.1", 9092, 1700000000000, endpoints=endpoints)) == {
        "listener_security_protocol_map": {"INTERNAL": "PLAINTEXT", "EXTERNAL": "SASL_SSL"},
        "endpoints": ["INTERNAL://10.0.0.1:9092", "EXTERNAL://b1:9093"],
        "rack": None,
        "jmx_port": -1,
        "host": "10.0.0.1",
        "timestamp": "1700000000000",
        "port": 9092,
        "version": 5,
    }
    only_tls = json.loads(broker_registration_json(None, -1, 1, endpoints=[("SSL", "SSL", "SSL://b1:9093")]))
    assert (only_tls["host"], only_tls["port"], only_tls["endpoints"]) == (None, -1, ["SSL://b1:9093"])


@pytest.mark.parametrize(
    "text, hosts, chroot",
    [
        ("zk:2181", "zk:2181", ""),
        (" zk1:2181, zk2:2182/kafka/one/ ", "zk1:2181,zk2:2182", "/kafka/one"),
    ],
)
def test_connect_strings_split_into_servers_and_chroot(text, hosts, chroot):
    connect = ZooKeeperConnect(text)
    assert (connect.hosts, connect.chroot, connect.path("/cluster/id")) == (hosts, chroot, chroot + "/cluster/id")


@pytest.mark.parametrize("text", ["", "zk", "zk:port", "zk:2181//x", "zk:2181/a b", "zk:2181,"])
def test_bad_connect_strings_are_refused_with_an_example(text):
    with pytest.raises(ValueError, match=r"is not HOST:PORT\[,HOST:PORT...\]\[/chroot\] \(for example"):
        ZooKeeperConnect(text)
