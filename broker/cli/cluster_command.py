"""``kafkalog cluster``: a local cluster in one command: a ZooKeeper server (the one in PySpark's
jars) and N brokers in cluster mode on free ports, their data under one directory. It prints where
they are, then waits; SIGTERM or Ctrl-C stops every broker cleanly, then ZooKeeper. Started again on
the same directory it is the same cluster, with its topics and records.

While it waits it watches its brokers: one that exits (killed, crashed) is reaped and named in one
line on stderr with the command that starts it again, ``kafkalog cluster restart-broker N
--data-dir DIR``. That command asks the running ``kafkalog cluster`` (its pid in ``DIR/cluster.pid``)
through a request file, ``DIR/restart-broker-N.request``; the cluster starts the broker again (it
stays the cluster's child, stopped with the others) and answers in ``DIR/restart-broker-N.answer``.

``kafkalog cluster describe`` (an optional first word, ``cluster_describe``) shows a running
cluster, any cluster, instead."""

import argparse
import os
import signal
import sys
import threading
import time

from broker.arguments import Subcommands, key_value, positive_int

from . import cluster_describe

DEFAULT_BROKERS = 3
WATCH_SECONDS = 0.5  # how often the running cluster looks at its brokers and for restart requests
RESTART_SECONDS = 120  # restart-broker's bound: the dead broker's ZooKeeper session must expire first
PID_FILE = "cluster.pid"


def _cluster(parser, args) -> int:
    if args.data_dir is None:
        parser.error(
            "the following arguments are required: --data-dir (or describe a running cluster: "
            "kafkalog cluster describe --bootstrap-server HOST:PORT)"
        )
    from broker.embedded_cluster import EmbeddedCluster

    running = _running_pid(args.data_dir)
    if running is not None:
        print(f"kafkalog cluster: a kafkalog cluster already runs on {args.data_dir} (pid {running})", file=sys.stderr)
        return 1
    cluster = EmbeddedCluster(args.data_dir, args.brokers or DEFAULT_BROKERS, dict(args.set), args.zookeeper_port)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # before starting: a signal during the start stops it too
        signal.signal(signum, lambda *_: stop.set())
    try:
        cluster.start()
    except (RuntimeError, OSError) as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        print(f"kafkalog cluster: {lines[-1] if lines else repr(exc)}", file=sys.stderr)
        return 1
    print(f"zookeeper.connect={cluster.zookeeper.connect}")
    for broker_id, broker in cluster.brokers.items():
        print(f"broker {broker_id}: {broker.bootstrap} (log dir {broker.log_dir})")
    print(f"bootstrap.servers={cluster.bootstrap}", flush=True)
    pid_file = os.path.join(args.data_dir, PID_FILE)
    with open(pid_file, "w") as f:
        f.write(f"{os.getpid()}\n")
    try:
        _watch(cluster, stop)
    finally:
        os.remove(pid_file)
    code = cluster.stop()
    print("kafkalog cluster: stopped" + ("" if code == 0 else f" (a broker exited with {code})"), file=sys.stderr)
    return 0 if code == 0 else 1


def _watch(cluster, stop: threading.Event) -> None:
    """Until ``stop``: name each broker that exits, once (``exited`` reaps it), and serve restart-broker."""
    reported = set()
    while not stop.wait(WATCH_SECONDS):
        for broker_id, code in cluster.exited().items():
            if broker_id not in reported:
                reported.add(broker_id)
                how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
                print(
                    f"kafkalog cluster: broker {broker_id} died ({how}; its log: "
                    f"{cluster.brokers[broker_id].stderr_path}); start it again with: kafkalog cluster "
                    f"restart-broker {broker_id} --data-dir {os.path.abspath(cluster.data_dir)}",
                    file=sys.stderr,
                    flush=True,
                )
        for broker_id in cluster.brokers:
            request = _request_path(cluster.data_dir, broker_id)
            if os.path.exists(request):
                answer = _restart(cluster, broker_id)
                if answer.startswith("restarted"):
                    reported.discard(broker_id)
                print(f"kafkalog cluster: broker {broker_id} {answer}", file=sys.stderr, flush=True)
                with open(request + ".tmp", "w") as f:
                    f.write(answer + "\n")
                os.replace(request + ".tmp", _answer_path(cluster.data_dir, broker_id))
                os.remove(request)


def _restart(cluster, broker_id: int) -> str:
    """Start a broker again; what happened, in a few words after "broker N"."""
    try:
        broker = cluster.restart(broker_id)
    except (RuntimeError, OSError) as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return f"not restarted: {lines[-1] if lines else repr(exc)}"
    return f"restarted on {broker.bootstrap}"


def _request_path(data_dir: str, broker_id: int) -> str:
    return os.path.join(data_dir, f"restart-broker-{broker_id}.request")


def _answer_path(data_dir: str, broker_id: int) -> str:
    return os.path.join(data_dir, f"restart-broker-{broker_id}.answer")


def _running_pid(data_dir: str) -> int | None:
    """The pid of the ``kafkalog cluster`` running on ``data_dir``, None if none does."""
    try:
        with open(os.path.join(data_dir, PID_FILE)) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):  # no file, a stale one, or not a number
        return None
    return pid


def _restart_broker(parser, restart, args) -> int:
    """``kafkalog cluster restart-broker N --data-dir DIR``: ask the cluster running there to start
    broker N again, and wait for its answer."""
    given = [
        option
        for option, value in (
            ("--brokers", args.brokers),
            ("--zookeeper-port", args.zookeeper_port),
            ("--set", args.set),
        )
        if value
    ]
    if given:
        parser.error(f"{given[0]} starts a cluster; restart-broker takes a broker id and --data-dir")
    if args.data_dir is None:
        restart.error("the following arguments are required: --data-dir (the running cluster's)")
    broker_id = args.broker_id
    if _running_pid(args.data_dir) is None:
        print(
            f"kafkalog cluster restart-broker: no kafkalog cluster runs on {args.data_dir} (start one: "
            f"kafkalog cluster --data-dir {args.data_dir})",
            file=sys.stderr,
        )
        return 1
    if not os.path.isdir(os.path.join(args.data_dir, f"broker-{broker_id}")):
        print(
            f"kafkalog cluster restart-broker: the cluster on {args.data_dir} has no broker {broker_id}",
            file=sys.stderr,
        )
        return 1
    answer_path = _answer_path(args.data_dir, broker_id)
    if os.path.exists(answer_path):
        os.remove(answer_path)  # left by an earlier request that stopped waiting
    open(_request_path(args.data_dir, broker_id), "w").close()
    deadline = time.monotonic() + RESTART_SECONDS
    while not os.path.exists(answer_path):
        if time.monotonic() > deadline or _running_pid(args.data_dir) is None:
            print(
                f"kafkalog cluster restart-broker: the cluster on {args.data_dir} did not answer within "
                f"{RESTART_SECONDS} s",
                file=sys.stderr,
            )
            return 1
        time.sleep(WATCH_SECONDS / 2)
    with open(answer_path) as f:
        answer = f.read().strip()
    os.remove(answer_path)
    if answer.startswith("restarted"):
        print(f"broker {broker_id} {answer}")
        return 0
    print(f"kafkalog cluster restart-broker: broker {broker_id} {answer}", file=sys.stderr)
    return 1


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "cluster",
        help="run a local cluster: ZooKeeper and N brokers (or describe one)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start a ZooKeeper server (from PySpark's jars; needs Java 17+) and N brokers in cluster\n"
        "mode (ids 1..N) on free ports, with their data in DIR (zookeeper/, broker-<id>/).\n"
        "Prints zookeeper.connect, one line per broker and, last, the bootstrap servers:\n"
        "  bootstrap.servers=127.0.0.1:<port>,127.0.0.1:<port>,...\n"
        "SIGTERM or Ctrl-C stops every broker cleanly, then ZooKeeper. A broker that dies is\n"
        "named on stderr; kafkalog cluster restart-broker N --data-dir DIR starts it again.\n\n"
        "kafkalog cluster describe --bootstrap-server HOST:PORT shows a running cluster instead:\n"
        "the controller, the brokers and the offline partitions (see its --help).",
        epilog="examples:\n"
        "  kafkalog cluster --brokers 3 --data-dir /tmp/kafkalog-cluster\n"
        "  kafkalog cluster --brokers 3 --data-dir data --set num.partitions=6\n"
        "  kafkalog cluster describe --bootstrap-server 127.0.0.1:38555\n"
        "  kafkalog cluster restart-broker 2 --data-dir /tmp/kafkalog-cluster\n\n"
        "exit status: 0 stopped cleanly, 1 the cluster could not start or a broker failed, 2 usage error",
    )
    parser.add_argument(
        "--brokers", type=positive_int, metavar="N", help=f"number of brokers (default {DEFAULT_BROKERS})"
    )
    parser.add_argument("--data-dir", metavar="DIR", help="where ZooKeeper and the brokers keep data (required)")
    parser.add_argument(
        "--zookeeper-port", type=positive_int, default=0, metavar="PORT", help="ZooKeeper's port (default: a free one)"
    )
    parser.add_argument(
        "--set",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka setting for every broker, for example --set num.partitions=6 (repeatable)",
    )
    parser.set_defaults(func=lambda args: _cluster(parser, args))
    actions = parser.add_subparsers(dest="action", metavar="[describe | restart-broker]")
    cluster_describe.add_parser(actions)
    describe = actions.choices["describe"]
    describe.set_defaults(func=_describe_only(parser, describe.get_default("func")))
    restart = actions.add_parser(
        "restart-broker",
        help="start a broker of a running kafkalog cluster again",
        description="Ask the kafkalog cluster running on DIR to start broker N again (after it died), on\n"
        "its port and log directory, once ZooKeeper has dropped its registration (its session\n"
        "expires: a few seconds). Prints where it listens.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  kafkalog cluster restart-broker 2 --data-dir /tmp/kafkalog-cluster\n\n"
        "exit status: 0 restarted, 1 not restarted (no cluster runs there, no such broker, it runs\n"
        "already, or it failed to start), 2 usage error",
    )
    restart.add_argument("broker_id", type=positive_int, metavar="N", help="the broker's id")
    restart.add_argument(
        "--data-dir", default=argparse.SUPPRESS, metavar="DIR", help="the running cluster's data directory"
    )
    restart.set_defaults(func=lambda args: _restart_broker(parser, restart, args))


def _describe_only(parser, describe):
    """``describe``, refusing the options that start a cluster (``kafkalog cluster --brokers 3 describe``)."""

    def run(args) -> int:
        given = [
            option
            for option, value in (
                ("--brokers", args.brokers),
                ("--data-dir", args.data_dir),
                ("--zookeeper-port", args.zookeeper_port),
                ("--set", args.set),
            )
            if value
        ]
        if given:
            parser.error(f"{given[0]} starts a cluster; describe takes --bootstrap-server (not both)")
        return describe(args)

    return run
