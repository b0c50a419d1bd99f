"""A broker's membership of its cluster: which cluster it joins (the id its log directory must
carry) and its registration, so the other brokers and the controller see it live.

``zookeeper.connect`` makes it a ``ZooKeeperRegistry`` (Kafka's ZooKeeper mode, the layout of
``zookeeper_data``): ``/cluster/id`` is read, or created by the first broker; the broker registers
itself as the **ephemeral** node ``/brokers/ids/<id>`` with Kafka's JSON (one endpoint per
listener, with the listener security protocol map), so the node goes when its
session ends (a clean stop, a crash, or no heartbeat within ``zookeeper.session.timeout.ms``); an
id already registered is refused; after its session expired (ZooKeeper unreachable for longer
than the timeout, then back), the broker registers again. A registered broker stands in every
controller election (``controller_election``). Without ``zookeeper.connect`` the broker is a
``StandaloneRegistry``, a one-node cluster: the cluster id is the one ``meta.properties`` has (made at the
first start), and there is nobody to register with. Both are a ``Registry``: the broker starts
either the same way.
"""

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from broker.log.manager import new_cluster_id

from .controller import Controller
from .controller_election import ControllerElection
from .metadata_cache import BrokerEndpoint
from .zookeeper_data import (
    CLUSTER_ID_PATH,
    PERSISTENT_PATHS,
    ZooKeeperConnect,
    broker_path,
    broker_registration_json,
    cluster_id_json,
    parse_cluster_id,
)

log = logging.getLogger(__name__)


class RegistryError(Exception):
    """The broker cannot join its cluster; the message says why and what to change."""


class Registry(Protocol):
    """A broker's membership of its cluster, in the order the broker uses it: ``start``, then
    ``cluster_id`` (before the log directory is opened), ``register`` once its listeners are bound,
    ``close`` when it stops. Failures are ``RegistryError``."""

    def start(self) -> None:
        """Reach the cluster."""
        ...

    def cluster_id(self) -> str | None:
        """The cluster's id, which the log directory must carry; None when the directory decides."""
        ...

    def register(self, endpoint: BrokerEndpoint) -> None:
        """Make this broker live to the others, as ``endpoint``."""
        ...

    def close(self) -> None:
        """Leave the cluster: the broker is no longer live."""
        ...


class StandaloneRegistry:
    """A broker without ``zookeeper.connect``: a cluster of itself."""

    def start(self) -> None:
        pass

    def cluster_id(self) -> None:
        """None: the log directory's ``meta.properties`` decides (and is made with a new id)."""

    def register(self, endpoint: BrokerEndpoint) -> None:
        pass

    def close(self) -> None:
        pass


class ZooKeeperRegistry:
    def __init__(self, connect: str, session_timeout_ms: int, connection_timeout_ms: int):
        self.connect = ZooKeeperConnect(connect)
        self._connection_timeout_s = connection_timeout_ms / 1000
        self._client = KazooClient(hosts=self.connect.hosts, timeout=session_timeout_ms / 1000)
        self._endpoint: BrokerEndpoint | None = None  # set once registered: what to register again after a lost session
        self._session_lost = False
        self._controller: Controller | None = None
        self._closing = False
        # the watches of a lost session are gone: the watchers read again
        self.new_session_listeners: list[Callable[[], None]] = []

    @property
    def client(self) -> KazooClient:
        return self._client

    def start(self) -> None:
        """Connect (RegistryError if ZooKeeper cannot be reached within the connection timeout)."""
        try:
            self._client.start(timeout=self._connection_timeout_s)
        except KazooTimeoutError:
            self._client.close()
            raise RegistryError(
                f"cannot reach ZooKeeper at {self.connect.hosts} within "
                f"{self._connection_timeout_s:g} s (zookeeper.connect; "
                f"zookeeper.connection.timeout.ms)"
            ) from None
        self._client.add_listener(self._on_state_change)

    @contextlib.contextmanager
    def _failures_as(self, what: str) -> Iterator[None]:
        """ZooKeeper's failures (connection lost, no permission on the chroot, ...) as RegistryError."""
        try:
            yield
        except KazooException as exc:
            raise RegistryError(f"cannot {what} in ZooKeeper at {self.connect}: {exc!r}") from None

    def cluster_id(self) -> str:
        """The id in ``/cluster/id``, created with a new one by the first broker of the cluster."""
        with self._failures_as("read or create the cluster id"):
            return self._get_or_create_cluster_id()

    def _get_or_create_cluster_id(self) -> str:
        path = self.connect.path(CLUSTER_ID_PATH)
        try:
            return self._read_cluster_id(path)
        except NoNodeError:
            pass
        try:
            created = new_cluster_id()
            self._client.create(path, cluster_id_json(created), makepath=True)
            log.info("created cluster id %s in %s", created, self.connect)
            return created
        except NodeExistsError:  # another broker of the new cluster was first
            return self._read_cluster_id(path)

    def _read_cluster_id(self, path: str) -> str:
        try:
            return parse_cluster_id(self._client.get(path)[0])
        except ValueError as exc:
            raise RegistryError(f"ZooKeeper at {self.connect}: {exc}") from None

    def register(self, endpoint: BrokerEndpoint) -> None:
        """Register this broker as live (RegistryError if its id is registered already)."""
        path = self.connect.path(broker_path(endpoint.node_id))
        with self._failures_as(f"register broker {endpoint.node_id}"):
            for persistent in PERSISTENT_PATHS:
                self._client.ensure_path(self.connect.path(persistent))
            try:
                self._create_registration(endpoint)
            except NodeExistsError:
                raise RegistryError(
                    f"broker id {endpoint.node_id} is already registered in ZooKeeper at "
                    f"{self.connect} ({path}, by {self._registered_at(path)}): another broker runs "
                    f"with this id; give this one another --broker-id"
                ) from None
            self._endpoint = endpoint
            log.info("registered broker %d in ZooKeeper at %s", endpoint.node_id, self.connect)
            self._controller = Controller(self._client, self.connect, endpoint.node_id)
            ControllerElection(self._client, self.connect, endpoint.node_id, self._controller).start()

    def _create_registration(self, endpoint: BrokerEndpoint) -> None:
        data = broker_registration_json(
            endpoint.host,
            endpoint.port,
            int(time.time() * 1000),
            endpoint.rack,
            [(e.listener, e.security_protocol, e.url) for e in endpoint.endpoints],
        )
        self._client.create(self.connect.path(broker_path(endpoint.node_id)), data, ephemeral=True, makepath=True)

    def _registered_at(self, path: str) -> str:
        """``host:port`` of the broker registered at ``path``, as far as it can be read."""
        try:
            registration = json.loads(self._client.get(path)[0])
            if registration.get("host") is not None:
                return f"{registration['host']}:{registration['port']}"
            return ", ".join(registration["endpoints"])  # no PLAINTEXT listener
        except (KazooException, ValueError, KeyError, TypeError):
            return "a broker whose registration cannot be read"

    def _on_state_change(self, state: str) -> None:
        """kazoo's session listener (on its thread: must not block). A LOST session took the
        ephemeral registration with it; once connected with a new session, register again."""
        if state == KazooState.LOST and not self._closing:
            self._session_lost = True
            log.warning(
                "ZooKeeper session lost: broker %s is not registered until it reconnects",
                self._endpoint.node_id if self._endpoint else "(not yet registered)",
            )
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            if self._endpoint is not None:
                self._client.handler.spawn(self._register_again, self._endpoint)

    def _register_again(self, endpoint: BrokerEndpoint) -> None:
        for listener in self.new_session_listeners:
            listener()
        try:
            self._create_registration(endpoint)
            log.info("registered broker %d again after a new ZooKeeper session", endpoint.node_id)
        except NodeExistsError:
            log.error(
                "broker id %d was registered by another broker while this one's ZooKeeper session was "
                "lost; this broker stays unregistered: stop one of them",
                endpoint.node_id,
            )
        except KazooException as exc:  # lost again: the next new session tries again
            self._session_lost = True
            log.warning("cannot register broker %d again yet: %r", endpoint.node_id, exc)

    def close(self) -> None:
        """End the session: the ephemeral registration goes at once."""
        self._closing = True
        if self._controller is not None:
            self._controller.stop()
        self._client.stop()
        self._client.close()


def registry_for(config) -> Registry:
    """The registry a broker's configuration asks for."""
    if not config.zookeeper_connect:
        return StandaloneRegistry()
    return ZooKeeperRegistry(
        config.zookeeper_connect, config.zookeeper_session_timeout_ms, config.zookeeper_connection_timeout_ms
    )
