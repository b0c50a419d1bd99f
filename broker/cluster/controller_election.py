"""Controller election through ZooKeeper, as Kafka's brokers do it: every registered broker watches
the ephemeral ``/controller`` node; whenever it is missing, each tries to create it with its own id,
and the one whose create succeeds is the controller. It then raises ``/controller_epoch`` (a
compare-and-set on the node's version, so two controllers can never take the same epoch), the
number that fences a stale controller's writes. The node goes with the controller's session (a
stop, a crash, a session expiry), and another broker takes over within the session timeout.

The winner's ``Controller`` (``controller``) does the work; a broker that sees ``/controller``
name another broker stops acting as controller.
"""

import logging
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import DataWatch

from .controller import Controller
from .zookeeper_data import CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, ZooKeeperConnect, controller_json, parse_controller

log = logging.getLogger(__name__)


class ControllerElection:
    def __init__(self, client: KazooClient, connect: ZooKeeperConnect, broker_id: int, controller: Controller):
        self._client = client
        self._connect = connect
        self.broker_id = broker_id
        self._controller = controller

    def start(self) -> None:
        """Watch ``/controller`` (and so take part in every election from now on)."""
        DataWatch(self._client, self._connect.path(CONTROLLER_PATH), self._on_controller)

    def _on_controller(self, data: bytes | None, stat: ZnodeStat | None) -> None:
        """kazoo's watch callback: the node was created, changed or deleted (or read again after a
        reconnection). With no controller, stand (on a worker, never in the callback)."""
        if data is None:
            self._client.handler.spawn(self._elect)
        elif parse_controller(data) != self.broker_id:
            self._controller.resign()

    def _elect(self) -> None:
        try:
            self._client.create(
                self._connect.path(CONTROLLER_PATH),
                controller_json(self.broker_id, int(time.time() * 1000)),
                ephemeral=True,
                makepath=True,
            )
        except NodeExistsError:  # another broker was quicker: the watch says which
            return
        except KazooException as exc:  # the session is in trouble: the watch fires again once it is back
            log.warning("broker %d cannot stand for controller now: %r", self.broker_id, exc)
            return
        try:
            epoch, version = self._raise_epoch()
        except KazooException as exc:  # the session ended: /controller went with it, and the watch fires
            log.warning("broker %d cannot raise the controller epoch: %r", self.broker_id, exc)
            return
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, epoch)
        self._controller.elected(epoch, version)

    def _raise_epoch(self) -> tuple[int, int]:
        """The new controller epoch and the version of ``/controller_epoch`` that holds it."""
        path = self._connect.path(CONTROLLER_EPOCH_PATH)
        while True:
            try:
                data, stat = self._client.get(path)
                epoch = int(data) + 1
                return epoch, self._client.set(path, str(epoch).encode(), version=stat.version).version
            except NoNodeError:
                try:
                    self._client.create(path, b"1", makepath=True)
                    return 1, 0
                except NodeExistsError:
                    continue
            except BadVersionError:  # a newer controller raised it meanwhile
                continue
