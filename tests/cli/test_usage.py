"""What every ``kafkalog`` command shares: ``--help`` with examples and exit codes (exit 0), usage
errors on one line (exit 2), an unreachable broker reported on one line within a bounded time
(exit 1), the installed ``kafkalog`` script, and the exit codes of dump-log and broker unchanged."""

import os
import socket
import subprocess
import sys

import pytest

from .support import kafkalog, one_line_error

COMMANDS = [
    ["topics"],
    ["topics", "create"],
    ["topics", "list"],
    ["topics", "describe"],
    ["topics", "delete"],
    ["produce"],
    ["consume"],
    ["load"],
    ["mirror"],
    ["dump-log"],
    ["broker"],
    ["acls", "list"],
    ["acls", "add"],
    ["acls", "remove"],
    ["cluster"],
    ["cluster", "describe"],
    ["cluster", "restart-broker"],
    ["transactions", "list"],
    ["transactions", "describe"],
]
CLIENT_COMMANDS = [
    ["topics", "create", "t"],
    ["topics", "list"],
    ["topics", "describe", "t"],
    ["topics", "delete", "t"],
    ["produce", "t"],
    ["consume", "t"],
    ["cluster", "describe"],
]
UNREACHABLE_SECONDS = 15  # the client retries for about 3 s; this bounds the whole command


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_shows_examples_and_exit_codes(command):
    done = kafkalog(*command, "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert "examples:\n  kafkalog " + command[0] in done.stdout
    if command != ["topics"]:  # the group: its actions have the details
        assert "exit status: 0 " in done.stdout and "2 usage error" in done.stdout
    if command != ["topics"] and command[0] in ("topics", "produce", "consume", "load"):
        assert "--bootstrap-server" in done.stdout and "127.0.0.1:9092" in done.stdout


def test_top_level_help_lists_every_command():
    done = kafkalog("--help")
    assert done.returncode == 0
    for name in ("broker", "topics", "produce", "consume", "load", "mirror", "dump-log"):
        assert f"    {name} " in done.stdout


@pytest.mark.parametrize(
    "args, prefix, message",
    [
        ([], "kafkalog: ", "the following arguments are required: COMMAND"),
        (["nonsense"], "kafkalog: ", "argument COMMAND: invalid choice: 'nonsense'"),
        (["topics"], "kafkalog topics: ", "the following arguments are required: ACTION"),
        (["topics", "create"], "kafkalog topics create: ", "one of the arguments TOPIC --topic is required"),
        (["produce"], "kafkalog produce: ", "one of the arguments TOPIC --topic is required"),
        (["consume", "a", "--topic", "b"], "kafkalog consume: ", "argument --topic: not allowed with argument TOPIC"),
        (["load", "--topic", "t"], "kafkalog load: ", "the following arguments are required: --output"),
        (["topics", "create", "t", "--partitions", "0"], "kafkalog topics create: ", "'0' is not a whole number >= 1"),
        (
            ["topics", "create", "t", "--config", "retention.ms"],
            "kafkalog topics create: ",
            "'retention.ms' is not KEY=VALUE",
        ),
        (["topics", "describe", "t", "--format", "yaml"], "kafkalog topics describe: ", "invalid choice: 'yaml'"),
        # an unknown option points to the help of the (sub)command that met it
        (
            ["consume", "t", "--unknown-option"],
            "kafkalog consume: ",
            "unrecognized arguments: --unknown-option (see 'kafkalog consume --help')",
        ),
        (
            ["topics", "--describe", "--topic", "t", "--unknown-option"],
            "kafkalog topics describe: ",
            "unrecognized arguments: --unknown-option (see 'kafkalog topics describe --help')",
        ),
        (
            ["groups", "describe", "g", "--verbose"],
            "kafkalog groups describe: ",
            "unrecognized arguments: --verbose (see 'kafkalog groups describe --help')",
        ),
        (["consume", "t", "--timeout", "0"], "kafkalog consume: ", "'0' is not a positive number of seconds"),
        (
            ["cluster"],
            "kafkalog cluster: ",
            "the following arguments are required: --data-dir (or describe a running "
            "cluster: kafkalog cluster describe --bootstrap-server HOST:PORT)",
        ),
        (
            ["cluster", "--brokers", "2", "describe"],
            "kafkalog cluster: ",
            "--brokers starts a cluster; describe takes --bootstrap-server (not both)",
        ),
        (
            ["cluster", "describe", "--data-dir", "d"],
            "kafkalog cluster describe: ",
            "unrecognized arguments: --data-dir d",
        ),
        (
            ["cluster", "describ"],
            "kafkalog cluster: ",
            "argument [describe | restart-broker]: invalid choice: 'describ'",
        ),
        (
            ["consume", "t", "--bootstrap-server", "no-port"],
            "kafkalog consume: ",
            "--bootstrap-server: 'no-port' is not a list of host:port",
        ),
        (["load", "--topics", "t"], "kafkalog load: ", "the following arguments are required: --output"),
        (
            ["load", "--output", "o", "--rewind-to-run", "0"],
            "kafkalog load: ",
            "argument --rewind-to-run: '0' is not a whole number >= 1",
        ),
        (
            ["mirror", "--from", "a:1", "--to", "b:2", "--checkpoint", "c"],
            "kafkalog mirror: ",
            "one of the arguments --topics/--topic --topic-pattern is required",
        ),
        (
            [
                "mirror",
                "--from",
                "a:1",
                "--to",
                "b:2",
                "--topics",
                "t",
                "--checkpoint",
                "c",
                "--available-now",
                "--trigger-interval",
                "5",
            ],
            "kafkalog mirror: ",
            "argument --trigger-interval: not allowed with argument --available-now",
        ),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, prefix, message):
    done = kafkalog(*args)
    assert message in one_line_error(done, 2, prefix)


def test_an_unreachable_broker_is_one_line_and_exit_1_in_bounded_time():
    """Every command that talks to a broker, run side by side against a closed port."""
    address = f"127.0.0.1:{closed_port()}"
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "broker.cli", *command, "--bootstrap-server", address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in CLIENT_COMMANDS
    ]
    try:
        results = [
            subprocess.CompletedProcess(p.args, p.wait(UNREACHABLE_SECONDS), p.stdout.read(), p.stderr.read())
            for p in processes
        ]
    finally:
        for process in processes:
            process.kill()
            process.stdout.close()
            process.stderr.close()
    for command, done in zip(CLIENT_COMMANDS, results, strict=True):
        name = " ".join(word for word in command if word != "t")
        message = one_line_error(done, 1, f"kafkalog {name}: ")
        assert f"no broker of {address} could be reached" in message and "Connection refused" in message
        assert done.stdout == ""


def test_the_installed_kafkalog_script_runs_the_same_commands(broker):
    script = os.path.join(os.path.dirname(sys.executable), "kafkalog")
    done = subprocess.run(
        [script, "topics", "list", "--bootstrap-server", broker.bootstrap], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stderr == ""
    assert subprocess.run([script, "consume", "--help"], capture_output=True, timeout=60).returncode == 0


def test_kafka_spellings_of_the_topic_and_the_bootstrap_servers(broker, request):
    topic = f"cli-spellings-{os.getpid()}"
    common = ["--topic", topic, "--bootstrap-servers", broker.bootstrap]
    assert kafkalog("topics", "create", *common, "--partitions", "1").returncode == 0
    done = kafkalog("produce", *common, input="one\ntwo\n")
    assert (done.returncode, done.stderr) == (0, "")
    done = kafkalog("consume", *common)
    assert [line.split("\t")[-1] for line in done.stdout.splitlines()] == ["one", "two"]
    assert kafkalog("delete-records", *common, "--before", "0:1").returncode == 0
    assert kafkalog("topics", "alter", *common, "--partitions", "2").returncode == 0
    assert "partitions: 2" in kafkalog("topics", "describe", *common).stdout
    assert kafkalog("topics", "list", "--bootstrap-servers", broker.bootstrap).stdout.split().count(topic) == 1
    assert "retention.ms" in kafkalog("configs", "describe", *common, "--all").stdout
    assert kafkalog("groups", "list", "--bootstrap-servers", broker.bootstrap).returncode == 0
    assert kafkalog("topics", "delete", *common).stdout == f"deleted topic {topic}\n"


def test_version():
    done = kafkalog("--version")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("kafkalog ") and done.stdout.split()[1][0].isdigit()


def test_a_port_in_use_is_one_line_naming_the_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kafkalog("broker", "--log-dir", tmp_path / "log", "--port", port, timeout=30)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if " INFO " not in line]  # the broker's log may start first
    assert errors == [
        f"kafkalog broker: port {port} on 127.0.0.1 is already in use (another broker?): choose "
        f"another --port, or --port 0 for a free one"
    ]


def test_a_log_dir_that_is_a_file_is_one_line_naming_it(tmp_path):
    (tmp_path / "file").write_text("")
    one_line_error(
        kafkalog("broker", "--log-dir", tmp_path / "file", "--port", "0"),
        1,
        f"kafkalog broker: {tmp_path / 'file'}: not a directory",
    )


def test_a_misspelt_broker_setting_gets_the_closest_known_name(tmp_path):
    done = kafkalog("broker", "--log-dir", tmp_path / "log", "--set", "log.retention.hour=1")
    one_line_error(
        done,
        1,
        "kafkalog broker: log.retention.hour: unknown or unsupported broker setting "
        "(did you mean log.retention.hours?)",
    )


def test_dump_log_and_broker_keep_their_exit_codes(tmp_path):
    one_line_error(kafkalog("dump-log", tmp_path / "missing.log"), 2, "kafkalog dump-log: ")
    one_line_error(kafkalog("broker", "--port", "0"), 1, "kafkalog broker: log.dirs: no log directory given")
