"""A local cluster as child processes: one ZooKeeper server (PySpark's jars) and N brokers on free
ports, for ``kafkalog cluster``, the notebooks and the tests.

    with EmbeddedCluster(data_dir, brokers=3) as cluster:
        ... cluster.bootstrap ...                  # "127.0.0.1:<port>,127.0.0.1:<port>,..."
        cluster.brokers[1].kill(); cluster.brokers[1].start()   # a broker dies and comes back
        cluster.exited()         # {id: exit code} of the brokers no longer running (reaped)
        cluster.restart(1)       # once ZooKeeper has dropped its registration

Layout of ``data_dir``: ``zookeeper/`` (its data and ``server.log``) and ``broker-<id>/`` (each
broker's log directory; its stderr in ``broker-<id>.broker.log``). Brokers are numbered from 1, run
with ``zookeeper.connect`` on the server and a short ZooKeeper session (``zookeeper.session.timeout.ms``,
so a dead broker's partitions lose their leader quickly) plus any ``settings`` given; started again
on the same directory they rejoin the same cluster.
"""

import os
from os import PathLike

from .cluster.zookeeper_data import broker_path
from .embedded import EmbeddedBroker
from .embedded_zookeeper import ZooKeeperServer

SESSION_TIMEOUT_MS = 6000


class EmbeddedCluster:
    def __init__(
        self,
        data_dir: str | PathLike[str],
        brokers: int = 3,
        settings: dict[str, str] | None = None,
        zookeeper_port: int = 0,
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least 1 broker, got {brokers}")
        self.data_dir = str(data_dir)
        self.zookeeper = ZooKeeperServer(os.path.join(self.data_dir, "zookeeper"), zookeeper_port)
        base = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), **(settings or {})}
        self.brokers = {
            broker_id: EmbeddedBroker(
                os.path.join(self.data_dir, f"broker-{broker_id}"), {**base, "broker.id": str(broker_id)}
            )
            for broker_id in range(1, brokers + 1)
        }

    def __enter__(self) -> "EmbeddedCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(broker.bootstrap for broker in self.brokers.values() if broker.running)

    def start(self) -> "EmbeddedCluster":
        """Start ZooKeeper, then every broker (each waits until it accepts connections)."""
        os.makedirs(self.data_dir, exist_ok=True)
        self.zookeeper.start()
        try:
            for broker in self.brokers.values():
                broker.settings["zookeeper.connect"] = self.zookeeper.connect
                broker.start()
        except BaseException:
            self.stop()
            raise
        return self

    def exited(self) -> dict[int, int]:
        """``{broker id: exit code}`` of the brokers started that are no longer running (each reaped)."""
        return {
            broker_id: broker.process.returncode
            for broker_id, broker in self.brokers.items()
            if broker.process is not None and not broker.running
        }

    def restart(self, broker_id: int) -> EmbeddedBroker:
        """Start broker ``broker_id`` again, on its port and log directory, once ZooKeeper has dropped
        its registration (a broker that died keeps it until its session expires, and a broker refuses
        an id registered already); RuntimeError if it is running or the registration stays."""
        broker = self.brokers[broker_id]
        if broker.running:
            raise RuntimeError(f"it is running (pid {broker.pid()})")
        broker.kill()  # nothing to kill: closes the pipe of the one that exited
        session_seconds = int(broker.settings["zookeeper.session.timeout.ms"]) / 1000
        if not self.zookeeper.wait_until_gone(broker_path(broker_id), 2 * session_seconds + 10):
            raise RuntimeError(
                f"broker {broker_id} is still registered in ZooKeeper {self.zookeeper.connect} "
                f"({broker_path(broker_id)}): another process runs with its id"
            )
        return broker.start()

    def stop(self) -> int:
        """SIGTERM every broker (clean shutdowns), then ZooKeeper; the first non-zero exit code, else 0."""
        codes = [broker.stop() for broker in self.brokers.values() if broker.process is not None]
        self.zookeeper.stop()
        return next((code for code in codes if code), 0)
