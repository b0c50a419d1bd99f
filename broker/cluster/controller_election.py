"""Controller election through ZooKeeper, as Kafka's brokers do it: every registered broker watches
the ephemeral ``/controller`` node; whenever it is missing, each tries to create it with its own id,
and the one whose create succeeds is the controller. It then raises ``/controller_epoch`` (a
compare-and-set on the node's version, so two controllers can never take the same epoch), the
number that fences a stale controller's writes. The node goes with the controller's session (a
stop, a crash, a session expiry), and another broker takes over within the session timeout.

So far the election is all the controller does: partition placement and leader changes are the
next step of issue 14, and Metadata does not name the elected controller yet.
"""

import logging
import time

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import DataWatch

from .zookeeper_data import CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, ZooKeeperConnect, controller_json

log = logging.getLogger(__name__)


class ControllerElection:
    def __init__(self, client, connect: ZooKeeperConnect, broker_id: int):
        self._client = client
        self._connect = connect
        self.broker_id = broker_id

    def start(self) -> None:
        """Watch ``/controller`` (and so take part in every election from now on)."""
        DataWatch(self._client, self._connect.path(CONTROLLER_PATH), self._on_controller)

    def _on_controller(self, data, stat) -> None:
        """kazoo's watch callback: the node was created, changed or deleted (or read again after a
        reconnection). With no controller, stand (on a worker, never in the callback)."""
        if data is None:
            self._client.handler.spawn(self._elect)

    def _elect(self) -> None:
        try:
            self._client.create(self._connect.path(CONTROLLER_PATH),
                                controller_json(self.broker_id, int(time.time() * 1000)), ephemeral=True,
                                makepath=True)
        except NodeExistsError:  # another broker was quicker: the watch says which
            return
        except KazooException as exc:  # the session is in trouble: the watch fires again once it is back
            log.warning("broker %d cannot stand for controller now: %r", self.broker_id, exc)
            return
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, self._raise_epoch())

    def _raise_epoch(self) -> int:
        path = self._connect.path(CONTROLLER_EPOCH_PATH)
        while True:
            try:
                data, stat = self._client.get(path)
                epoch = int(data) + 1
                self._client.set(path, str(epoch).encode(), version=stat.version)
                return epoch
            except NoNodeError:
                try:
                    self._client.create(path, b"1", makepath=True)
                    return 1
                except NodeExistsError:
                    continue
            except BadVersionError:  # a newer controller raised it meanwhile
                continue
