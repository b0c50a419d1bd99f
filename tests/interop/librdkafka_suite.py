"""Run librdkafka's own test suite (its ``tests/test-runner``) against this broker.

librdkafka's tests run against any broker named in their ``test.conf``. This script builds them
from a librdkafka checkout (cloned at ``--ref`` into ``--source`` when that directory does not
exist; nothing of librdkafka is kept in this repository), starts an embedded broker, and runs each
selected test alone, in quick mode, with a time limit, printing one ``PASS``/``FAIL`` line per
test and the tail of a failing test's output. It is not part of ``make test``: it needs the
network once and takes minutes.

    .venv/bin/python -m tests.interop.librdkafka_suite                 # the default selection
    .venv/bin/python -m tests.interop.librdkafka_suite 0011 0092       # some tests, by number

``TEST_KAFKA_VERSION`` tells the tests which Kafka behaviour to expect (the default, 3.9.0: this
broker refuses what Kafka 3.2+ refuses, e.g. a setting named twice in AlterConfigs).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from broker.embedded import EmbeddedBroker

REPOSITORY = "https://github.com/confluentinc/librdkafka"
COLOURS = re.compile(r"\x1b\[[0-9;]*m")
# producer, consumer, group, offset and admin tests that need one broker, no SSL/SASL setup and no
# Kafka scripts (0052, 0077 and 0109 call kafka-topics.sh through KAFKA_PATH); 0081 (admin) passes
# up to altering a broker's sasl.kerberos.* setting, which this broker does not have
DEFAULT_TESTS = (
    "0001 0002 0003 0005 0007 0008 0011 0012 0013 0014 0015 0017 0019 0022 0026 0029 0030 "
    "0031 0034 0036 0040 0041 0042 0044 0045 0046 0047 0048 0049 0050 0051 0053 0054 0055 "
    "0056 0057 0059 0060 0061 0062 0063 0065 0067 0068 0069 0070 0073 0074 0075 0076 0082 "
    "0083 0084 0085 0086 0088 0089 0090 0091 0092 0093 0094 0099 0100 0102 0106 0107 0110 "
    "0112 0113 0114 0116 0118 0120 0122 0125 0127 0130 0137"
).split()
# the authorizer is on (0081 creates ACLs), with the tests' anonymous principal a super user
BROKER_SETTINGS = {
    "num.partitions": "4",
    "log.cleaner.backoff.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}


def build(source: Path, ref: str) -> Path:
    """librdkafka's test runner, built (once) from ``source``; cloned there at ``ref`` if absent."""
    if not source.exists():
        subprocess.run(
            ["git", "clone", "--quiet", "--depth", "1", "--branch", ref, REPOSITORY, str(source)], check=True
        )
    runner = source / "tests" / "test-runner"
    if not runner.exists():
        jobs = str(os.cpu_count() or 1)
        subprocess.run(
            ["./configure", "--disable-zstd", "--disable-gssapi", "--disable-curl", "--disable-lz4-ext"],
            cwd=source,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(["make", "-j", jobs, "libs"], cwd=source, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["make", "-j", jobs, "-C", "tests", "build"], cwd=source, check=True, stdout=subprocess.DEVNULL)
    return runner


def run_test(runner: Path, number: str, conf: Path, kafka_version: str, timeout: float) -> tuple[bool, str]:
    """Whether test ``number`` passed, and its output."""
    source = runner.parent.parent
    env = {
        **os.environ,
        "TESTS": number,
        "RDKAFKA_TEST_CONF": str(conf),
        "TEST_KAFKA_VERSION": kafka_version,
        "LD_LIBRARY_PATH": f"{source / 'src'}:{source / 'src-cpp'}",
    }
    try:
        done = subprocess.run(
            [str(runner), "-Q", "-p1"],
            cwd=runner.parent,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return False, output + f"\n(no end within {timeout:.0f} s)"
    return done.returncode == 0, done.stdout + done.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="*", default=DEFAULT_TESTS, help="test numbers (default: a selection)")
    parser.add_argument(
        "--source",
        type=Path,
        default=Path.home() / ".cache" / "kafkalog" / "librdkafka",
        help="a librdkafka checkout (cloned here if missing)",
    )
    parser.add_argument("--ref", default="v2.15.0", help="the librdkafka tag to clone")
    parser.add_argument("--kafka-version", default="3.9.0", help="TEST_KAFKA_VERSION given to the tests")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per test")
    args = parser.parse_args(argv)
    runner = build(args.source, args.ref)
    failed = []
    with (
        tempfile.TemporaryDirectory(prefix="librdkafka-suite-") as work,
        EmbeddedBroker(Path(work) / "log", BROKER_SETTINGS) as broker,
    ):
        conf = Path(work) / "test.conf"
        conf.write_text(f"bootstrap.servers={broker.bootstrap}\n")
        for number in args.tests:
            passed, output = run_test(runner, number, conf, args.kafka_version, args.timeout)
            print(f"{number} {'PASS' if passed else 'FAIL'}", flush=True)
            if not passed:
                failed.append(number)
                tail = COLOURS.sub("", output).splitlines()[-25:]
                print("".join(f"    {line}\n" for line in tail), end="", flush=True)
    print(f"{len(args.tests) - len(failed)} passed, {len(failed)} failed{': ' + ' '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
