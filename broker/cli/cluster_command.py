"""``kafkalog cluster``: a local cluster in one command: a ZooKeeper server (the one in PySpark's
jars) and N brokers in cluster mode on free ports, their data under one directory. It prints where
they are, then waits; SIGTERM or Ctrl-C stops every broker cleanly, then ZooKeeper. Started again on
the same directory it is the same cluster, with its topics and records.

``kafkalog cluster describe`` (an optional first word, ``cluster_describe``) shows a running
cluster, any cluster, instead."""

import argparse
import signal
import sys
import threading

from broker.arguments import key_value, positive_int

from . import cluster_describe

DEFAULT_BROKERS = 3


def _cluster(parser, args) -> int:
    if args.data_dir is None:
        parser.error("the following arguments are required: --data-dir (or describe a running cluster: "
                     "kafkalog cluster describe --bootstrap-server HOST:PORT)")
    from broker.embedded_cluster import EmbeddedCluster
    cluster = EmbeddedCluster(args.data_dir, args.brokers or DEFAULT_BROKERS, dict(args.set), args.zookeeper_port)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # before starting: a signal during the start stops it too
        signal.signal(signum, lambda *_: stop.set())
    try:
        cluster.start()
    except (RuntimeError, OSError) as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        print(f"kafkalog cluster: {lines[-1] if lines else exc!r}", file=sys.stderr)
        return 1
    print(f"zookeeper.connect={cluster.zookeeper.connect}")
    for broker_id, broker in cluster.brokers.items():
        print(f"broker {broker_id}: {broker.bootstrap} (log dir {broker.log_dir})")
    print(f"bootstrap.servers={cluster.bootstrap}", flush=True)
    stop.wait()
    code = cluster.stop()
    print("kafkalog cluster: stopped" + ("" if code == 0 else f" (a broker exited with {code})"), file=sys.stderr)
    return 0 if code == 0 else 1


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "cluster", help="run a local cluster: ZooKeeper and N brokers (or describe one)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start a ZooKeeper server (from PySpark's jars; needs Java 17+) and N brokers in cluster\n"
                    "mode (ids 1..N) on free ports, with their data in DIR (zookeeper/, broker-<id>/).\n"
                    "Prints zookeeper.connect, one line per broker and, last, the bootstrap servers:\n"
                    "  bootstrap.servers=127.0.0.1:<port>,127.0.0.1:<port>,...\n"
                    "SIGTERM or Ctrl-C stops every broker cleanly, then ZooKeeper.\n\n"
                    "kafkalog cluster describe --bootstrap-server HOST:PORT shows a running cluster instead:\n"
                    "the controller, the brokers and the offline partitions (see its --help).",
        epilog="examples:\n"
               "  kafkalog cluster --brokers 3 --data-dir /tmp/kafkalog-cluster\n"
               "  kafkalog cluster --brokers 3 --data-dir data --set num.partitions=6\n"
               "  kafkalog cluster describe --bootstrap-server 127.0.0.1:38555\n\n"
               "exit status: 0 stopped cleanly, 1 the cluster could not start or a broker failed, 2 usage error")
    parser.add_argument("--brokers", type=positive_int, metavar="N",
                        help=f"number of brokers (default {DEFAULT_BROKERS})")
    parser.add_argument("--data-dir", metavar="DIR", help="where ZooKeeper and the brokers keep data (required)")
    parser.add_argument("--zookeeper-port", type=positive_int, default=0, metavar="PORT",
                        help="ZooKeeper's port (default: a free one)")
    parser.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                        help="a Kafka setting for every broker, for example --set num.partitions=6 (repeatable)")
    parser.set_defaults(func=lambda args: _cluster(parser, args))
    actions = parser.add_subparsers(dest="action", metavar="[describe]")
    cluster_describe.add_parser(actions)
    describe = actions.choices["describe"]
    describe.set_defaults(func=_describe_only(parser, describe.get_default("func")))


def _describe_only(parser, describe):
    """``describe``, refusing the options that start a cluster (``kafkalog cluster --brokers 3 describe``)."""
    def run(args) -> int:
        given = [option for option, value in (("--brokers", args.brokers), ("--data-dir", args.data_dir),
                                              ("--zookeeper-port", args.zookeeper_port), ("--set", args.set)) if value]
        if given:
            parser.error(f"{given[0]} starts a cluster; describe takes --bootstrap-server (not both)")
        return describe(args)
    return run
