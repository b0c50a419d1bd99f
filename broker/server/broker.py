"""The broker process: open the log directory, serve connections, shut down cleanly on SIGTERM.

Start-up joins the cluster (with ``zookeeper.connect``: learns the cluster id from ZooKeeper, which
the log directory must carry), loads the topics and logs (recovering after a crash), binds the
listeners, registers the broker (in ZooKeeper, as live, with one endpoint per listener), starts
the group coordinator, then listens (a client connecting earlier is refused and retries) and prints
exactly one line, ``kafkalog broker <id> listening on <host>:<port>`` (with several listeners, each
address followed by its listener's name). SIGTERM (or SIGINT) stops
accepting connections, closes those with no request being handled, lets the handlers in flight
finish (long-polling fetches return at once) and writes their responses as far as the sockets take
them without waiting for clients that do not read, then waits for the disk work to end, flushes
every log, writes the checkpoints and the clean-shutdown marker, and exits 0. Anything abandoned
on the way is one log line, never a traceback per connection. If a
step of the shutdown fails (a full disk) it says so in one line and exits 1; the next start
recovers. Temporary files a crash left next to ``topics.json`` and the checkpoints are removed at start.
"""

import asyncio
import functools
import logging
import os
import resource
import signal
import sys

from broker.cluster.local_metadata import LocalMetadata
from broker.cluster.metadata_cache import BrokerEndpoint, Endpoint, MetadataCache
from broker.cluster.metadata_source import MetadataSource
from broker.cluster.registry import Registry, ZooKeeperRegistry, registry_for
from broker.cluster.zookeeper_acls import ZooKeeperAcls
from broker.cluster.zookeeper_isr import ZooKeeperIsr
from broker.cluster.zookeeper_metadata import ZooKeeperMetadata
from broker.cluster.zookeeper_producer_ids import ZooKeeperProducerIdBlocks
from broker.cluster.zookeeper_topics import ZooKeeperTopics
from broker.common.files import remove_stale_temporaries
from broker.log.errors import LogError
from broker.log.log_cleaner import CleanerSettings
from broker.log.manager import LogManager
from broker.replica.replica_manager import ReplicaManager
from broker.security.acl_store import AclStore, LocalAcls
from broker.security.acls import Authorizer
from broker.security.credentials import ScramCredentials

from .config import BrokerConfig
from .connection import Connection
from .context import BrokerContext
from .group_runtime import GroupRuntime
from .io_pool import IoPool
from .listeners import Listener
from .producer_ids import ProducerIdAllocator
from .replication import Replication
from .request_memory import RequestMemory
from .session import Session
from .tls_channel import start_tls
from .topics import TopicRegistry
from .transaction_runtime import TransactionRuntime
from .waiters import DataWaiters

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 30  # for handlers in flight (disk work); nothing waits for clients


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.ctx: BrokerContext | None = None  # set by a successful start
        self._servers: list[asyncio.Server] = []
        self._registry: Registry | None = None
        self.metadata_source: MetadataSource | None = None  # what publishes the cluster, once started
        self._connections: dict[asyncio.Task, Connection] = {}
        self._replication: Replication | None = None  # the fetchers and the ISR check, once started

    async def start(self) -> list[tuple[Listener, int]]:
        """Open the logs and bind the listeners; return each listener with its bound port."""
        config = self.config
        _raise_open_file_limit()
        registry = registry_for(config)
        await asyncio.to_thread(registry.start)
        try:
            cluster_id = await asyncio.to_thread(registry.cluster_id)
            os.makedirs(config.log_dir, exist_ok=True)
            metadata = MetadataCache(config.broker_id)
            topics = _topic_store(registry, config, metadata)
            log_manager = LogManager(
                config.log_dir,
                config.log,
                broker_id=config.broker_id,
                cluster_id=cluster_id,
                topic_config=topics.config_for,
                recovery_threads=config.num_recovery_threads_per_data_dir,
                checkpoint_interval_ms=config.checkpoint_interval_ms,
                retention_check_interval_ms=config.retention_check_interval_ms,
                cleaner_settings=CleanerSettings(
                    config.cleaner_enable,
                    config.cleaner_threads,
                    config.cleaner_dedupe_buffer_size,
                    config.cleaner_backoff_ms,
                ),
            ).open()
        except BaseException:
            registry.close()
            raise
        replicas = ReplicaManager(log_manager, config.broker_id)  # from now on the owner of the partition logs
        acls = None
        try:
            stale = remove_stale_temporaries(config.log_dir)  # only now: the directory's lock is ours
            if stale:
                log.info("removed temporary files left by an interrupted write: %s", ", ".join(stale))
            topics.attach(replicas)
            producer_ids = ProducerIdAllocator(
                config.log_dir,
                ZooKeeperProducerIdBlocks(registry.client, registry.connect, config.broker_id).reserve
                if isinstance(registry, ZooKeeperRegistry)
                else None,
            )
            acls = _acl_store(registry, config)  # before the listeners: no request is served without the ACLs
            for listener in config.listeners:
                self._servers.append(await _bind(listener, functools.partial(self._on_connection, listener)))
            bound = [
                (listener, server.sockets[0].getsockname()[1])
                for listener, server in zip(config.listeners, self._servers, strict=True)
            ]
            endpoint = broker_endpoint(config, bound)
            assert log_manager.cluster_id is not None  # an open log directory belongs to a cluster
            self.metadata_source = source = _metadata_source(
                registry, topics, log_manager.cluster_id, endpoint, metadata, replicas
            )
            await asyncio.to_thread(registry.register, endpoint)
            await asyncio.to_thread(source.start)  # this broker among the live ones
        except BaseException:
            for server in self._servers:
                server.close()
            if acls is not None:
                acls.stop()
            replicas.shutdown()
            registry.close()
            raise
        self._registry = registry
        self.ctx = ctx = BrokerContext(
            config,
            metadata,
            replicas,
            topics,
            producer_ids,
            DataWaiters(),
            IoPool(config.num_io_threads),
            RequestMemory(config.queued_max_request_bytes),
            {listener.name: port for listener, port in bound},
            ScramCredentials(config.log_dir),
            acls,
            Authorizer(config.authorizer, acls.acls),
        )
        ctx.groups = GroupRuntime(ctx)
        ctx.groups.start()
        ctx.transactions = TransactionRuntime(ctx)
        ctx.transactions.start()
        self._replication = Replication(ctx)
        self._replication.start()
        for server in self._servers:  # only now: a client connecting earlier is refused and tries again
            await server.start_serving()
        return bound

    async def _on_connection(
        self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        session = Session(listener.name, listener.security_protocol, writer.get_extra_info("peername"))
        tls = self.config.tls.get(listener.name)
        if tls and not await start_tls(writer, tls, session):
            return
        connection = Connection(self.ctx, reader, writer, session)
        task = asyncio.current_task()
        assert task is not None  # a connection is served by a task of its own
        self._connections[task] = connection
        try:
            await connection.serve()
        finally:
            self._connections.pop(task, None)

    async def stop(self) -> None:
        """Stop accepting, finish the handlers in flight, then flush and close the logs cleanly."""
        ctx, source, registry = self.ctx, self.metadata_source, self._registry
        if ctx is None or source is None or registry is None:
            raise RuntimeError("the broker was not started")
        ctx.stopping = True
        for server in self._servers:
            server.close()
        ctx.waiters.notify_all()
        ctx.request_memory.stop_waiting()
        for connection in self._connections.values():
            connection.stop()
        ctx.groups.coordinator.shutdown()  # waiting JoinGroups and SyncGroups are answered: their handlers end
        if self._connections:
            connections = dict(self._connections)
            _, late = await asyncio.wait(list(connections), timeout=SHUTDOWN_GRACE_SECONDS)
            if late:
                log.error(
                    "%d request(s) still in flight after %d s; shutting down without them",
                    len(late),
                    SHUTDOWN_GRACE_SECONDS,
                )
            abandoned = sum(c.abandoned for c in connections.values())
            if abandoned:
                log.warning("abandoned the responses to %d connection(s) that were not reading", abandoned)
        for server in self._servers:
            await server.wait_closed()
        await ctx.groups.stop()
        await ctx.transactions.stop()
        if self._replication is not None:
            await self._replication.stop()
        ctx.io.shutdown()
        source.stop()
        ctx.acls.stop()
        try:
            ctx.replicas.shutdown()
        finally:
            registry.close()  # the registration goes with the session


def _topic_store(registry: Registry, config: BrokerConfig, metadata: MetadataCache) -> TopicRegistry | ZooKeeperTopics:
    """Where topics are kept: ZooKeeper in a cluster, ``topics.json`` on a single broker (one interface)."""
    if isinstance(registry, ZooKeeperRegistry):
        return ZooKeeperTopics(registry.client, registry.connect, config.log, config.broker_id, metadata)
    return TopicRegistry(config.log_dir, config.log, config.broker_id)


def _acl_store(registry: Registry, config: BrokerConfig) -> AclStore:
    """Where ACLs are kept: ZooKeeper in a cluster (Kafka's nodes), ``acls.json`` on a single broker (one interface)."""
    if isinstance(registry, ZooKeeperRegistry):
        acls = ZooKeeperAcls(registry.client, registry.connect)
        registry.new_session_listeners.append(acls.changed)
        return acls
    return LocalAcls(config.log_dir)


def _metadata_source(
    registry: Registry,
    topics: TopicRegistry | ZooKeeperTopics,
    cluster_id: str,
    endpoint: BrokerEndpoint,
    metadata: MetadataCache,
    replicas: ReplicaManager,
) -> MetadataSource:
    """What publishes the cluster to ``metadata`` and ``replicas``: ZooKeeper's nodes in a cluster, the
    topic store's changes on a single broker."""
    if isinstance(topics, ZooKeeperTopics):
        assert isinstance(registry, ZooKeeperRegistry)  # a topic store in ZooKeeper comes with its registry
        source = ZooKeeperMetadata(registry.client, registry.connect, cluster_id, metadata, replicas, topics)
        topics.metadata = source
        registry.new_session_listeners.append(source.changed)
        replicas.isr_store = ZooKeeperIsr(registry.client, registry.connect)
        return source
    return LocalMetadata(topics, cluster_id, endpoint, metadata, replicas)


def broker_endpoint(config: BrokerConfig, bound: list[tuple[Listener, int]]) -> BrokerEndpoint:
    """This broker as the cluster sees it: for each listener, the address advertised to its clients
    (``advertised.listeners``, else the listener's host and bound port)."""
    return BrokerEndpoint.of(
        config.broker_id,
        [
            Endpoint(listener.name, listener.security_protocol, *config.advertised_address(listener, port))
            for listener, port in bound
        ],
    )


class BindError(OSError):
    """A listener's address could not be bound; ``listener`` says which."""

    def __init__(self, listener: Listener, cause: OSError):
        super().__init__(cause.errno, cause.strerror)
        self.listener = listener


async def _bind(listener: Listener, on_connection) -> asyncio.Server:
    try:
        return await asyncio.start_server(
            on_connection, listener.host or None, listener.port, reuse_address=True, start_serving=False
        )
    except OSError as exc:
        raise BindError(listener, exc) from None


def ready_line(broker_id: int, bound: list[tuple[Listener, int]]) -> str:
    """``kafkalog broker <id> listening on <host>:<port>``; with several listeners each address is
    followed by its listener's name: ``127.0.0.1:9092 (PLAINTEXT), 0.0.0.0:9093 (SECURE)``."""
    addresses = [f"{listener.host or '0.0.0.0'}:{port}" for listener, port in bound]
    if len(bound) > 1:
        addresses = [f"{address} ({listener.name})" for address, (listener, _) in zip(addresses, bound, strict=True)]
    return f"kafkalog broker {broker_id} listening on {', '.join(addresses)}"


def _raise_open_file_limit() -> None:
    """Use all the descriptors the system allows: the logs keep a share of them open (the least
    recently used closed first, ``broker.log.open_files``), connections take the rest."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        log.info("raised the open file limit from %d to %d", soft, hard)


async def serve(config: BrokerConfig) -> int:
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):  # before the ready line: a SIGTERM right after it is clean
        loop.add_signal_handler(signum, stopped.set)
    broker = Broker(config)
    bound = await broker.start()
    print(ready_line(config.broker_id, bound), flush=True)
    await stopped.wait()
    log.info("shutting down")
    try:
        await broker.stop()
    except (OSError, LogError) as exc:
        log.error("shutdown incomplete: %s", exc)  # the log manager's error says which steps failed
        return 1
    log.info("stopped cleanly")
    return 0


def run(config: BrokerConfig) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return asyncio.run(serve(config))
