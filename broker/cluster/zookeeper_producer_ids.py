"""Producer id blocks of a cluster, reserved in ZooKeeper's ``/latest_producer_id_block`` as Kafka's
ZooKeeper-era brokers reserve them (``{"version":1,"broker":B,"block_start":"S","block_end":"E"}``,
the next block taken with a conditional update on the node's version), so that no two brokers ever
hand out the same producer id: a partition's producers are told apart on every replica, whichever
broker gave them their id."""

import json

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from .zookeeper_data import ZooKeeperConnect

PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"


class ZooKeeperProducerIdBlocks:
    def __init__(self, client: KazooClient, connect: ZooKeeperConnect, broker_id: int):
        self._client = client
        self._path = connect.path(PRODUCER_ID_BLOCK_PATH)
        self._broker_id = broker_id

    def reserve(self, size: int) -> int:
        """The first id of a new block of ``size`` ids, reserved for this broker (KazooException when
        ZooKeeper fails)."""
        while True:
            try:
                data, stat = self._client.get(self._path)
            except NoNodeError:
                try:
                    self._client.create(self._path, self._json(0, size), makepath=True)
                    return 0
                except NodeExistsError:  # another broker was first
                    continue
            start = int(json.loads(data)["block_end"]) + 1
            try:
                self._client.set(self._path, self._json(start, size), version=stat.version)
                return start
            except BadVersionError:  # another broker took a block meanwhile
                continue

    def _json(self, start: int, size: int) -> bytes:
        block = {"version": 1, "broker": self._broker_id, "block_start": str(start), "block_end": str(start + size - 1)}
        return json.dumps(block, separators=(",", ":")).encode()
