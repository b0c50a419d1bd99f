"""Producer id blocks reserved in a real ZooKeeper's ``/latest_producer_id_block`` (Kafka's JSON):
brokers never hand out the same producer id, and a malformed node is an error, not a reuse."""

import json
import threading

import pytest
from kazoo.client import KazooClient

from broker.cluster.zookeeper_data import ZooKeeperConnect
from broker.cluster.zookeeper_producer_ids import PRODUCER_ID_BLOCK_PATH, ZooKeeperProducerIdBlocks
from broker.server.producer_ids import ProducerIdAllocator


@pytest.fixture
def client(zookeeper):
    connect = ZooKeeperConnect(zookeeper)
    kazoo = KazooClient(hosts=zookeeper.split("/", 1)[0])
    kazoo.start(timeout=30)
    yield kazoo, connect
    kazoo.stop()
    kazoo.close()


def test_brokers_reserving_blocks_at_once_never_share_an_id(client, tmp_path):
    kazoo, connect = client
    allocators = [
        ProducerIdAllocator(str(tmp_path), ZooKeeperProducerIdBlocks(kazoo, connect, broker).reserve)
        for broker in (1, 2, 3)
    ]
    given: list[int] = []

    def allocate(allocator):
        for _ in range(1500):  # two blocks each
            given.append(allocator.next_id())

    threads = [threading.Thread(target=allocate, args=(a,)) for a in allocators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(given) == 4500 and len(set(given)) == 4500
    node = json.loads(kazoo.get(connect.path(PRODUCER_ID_BLOCK_PATH))[0])
    assert node["version"] == 1 and node["block_end"] == str(5 * 1000 + 999)  # six blocks: 0-999 ... 5000-5999
    assert not (tmp_path / "producer-id-block").exists()  # a cluster's blocks are not the log directory's


def test_a_malformed_block_node_is_an_error(client):
    kazoo, connect = client
    kazoo.create(connect.path(PRODUCER_ID_BLOCK_PATH), b"not json", makepath=True)
    with pytest.raises(ValueError):
        ZooKeeperProducerIdBlocks(kazoo, connect, 1).reserve(1000)
