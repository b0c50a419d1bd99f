"""The package layering (docs/architecture.md#layering), read from the source: which modules may
import which. A module that imports across a forbidden line fails here with its name and the import.

The rules, bottom to top:

* ``broker/common`` (configuration errors and parsers, atomic files, the clock, the ListOffsets timestamps,
  finding java) stands below everything: it imports nothing else of the project.
* ``broker/records`` and ``broker/protocol`` (bytes on disk and on the wire) import neither the log
  nor anything above it, nor the security, coordinator or cluster code.
* ``broker/security`` (principals, ACLs, credentials, TLS and SASL settings) and
  ``broker/coordinator`` (consumer groups) are libraries of the server and the client: neither
  imports the log's users (replica, cluster), the server, the client or the CLI.
* ``broker/log`` imports nothing above it (replica, cluster, server, client, CLI); ``broker/replica``
  and ``broker/cluster`` never import the server, the client or the CLI.
* ``broker/server`` never imports the client or the CLI, and ``broker/client`` never imports the
  server or the CLI: they meet only on the wire.
* The top-level modules ``broker/*.py`` (argument and properties helpers, the embedded broker,
  ZooKeeper and cluster) run the server as a process and never import it or the CLI;
  ``broker/__main__.py`` is ``kafkalog broker``, an entry point like the CLI.
* Nothing under ``broker/`` (the CLI included) imports ``jobs``, ``spark_kafka_source``,
  ``pyspark_kafkalog`` or ``benchmarks``: they stand above the broker. The CLI's ``load`` and
  ``mirror`` subcommands are Spark jobs, found through the ``kafkalog.commands`` entry points.
* ``jobs``, ``spark_kafka_source`` and ``pyspark_kafkalog`` use the broker through its client, never
  its server or CLI, and the Spark source never imports the jobs.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

ABOVE_THE_BROKER = ("jobs", "spark_kafka_source", "pyspark_kafkalog", "benchmarks")


def _broker_parts_except(kept: str) -> tuple[str, ...]:
    """Every package and top-level module of ``broker`` (``broker.log``, ``broker.embedded``...) but ``kept``."""
    parts = {
        path.stem
        for path in (ROOT / "broker").iterdir()
        if (path / "__init__.py").is_file() or (path.suffix == ".py" and path.stem != "__init__")
    }
    return tuple(sorted(f"broker.{part}" for part in parts if f"broker.{part}" != kept))


# files (a glob below the repository) -> the packages and modules they must never import
FORBIDDEN = {
    "broker/**/*.py": ABOVE_THE_BROKER,
    "broker/common/**/*.py": _broker_parts_except("broker.common"),
    "broker/records/**/*.py": (
        "broker.log",
        "broker.replica",
        "broker.cluster",
        "broker.server",
        "broker.client",
        "broker.cli",
        "broker.security",
        "broker.coordinator",
    ),
    "broker/protocol/**/*.py": (
        "broker.log",
        "broker.replica",
        "broker.cluster",
        "broker.server",
        "broker.client",
        "broker.cli",
        "broker.security",
        "broker.coordinator",
    ),
    "broker/security/**/*.py": (
        "broker.log",
        "broker.replica",
        "broker.cluster",
        "broker.coordinator",
        "broker.server",
        "broker.client",
        "broker.cli",
    ),
    "broker/coordinator/**/*.py": ("broker.replica", "broker.cluster", "broker.server", "broker.client", "broker.cli"),
    "broker/log/**/*.py": ("broker.replica", "broker.cluster", "broker.server", "broker.client", "broker.cli"),
    "broker/replica/**/*.py": ("broker.server", "broker.client", "broker.cli"),
    "broker/cluster/**/*.py": ("broker.server", "broker.client", "broker.cli"),
    "broker/server/**/*.py": ("broker.client", "broker.cli"),
    "broker/client/**/*.py": ("broker.server", "broker.cli"),
    "broker/[!_]*.py": ("broker.server", "broker.cli"),  # the top-level modules but __init__ and __main__
    "jobs/**/*.py": ("broker.server", "broker.cli"),
    "spark_kafka_source/**/*.py": ("broker.server", "broker.cli", "jobs"),
    "pyspark_kafkalog/**/*.py": ("broker.server", "broker.cli", "jobs"),
}


def _imports(path: pathlib.Path, package: str) -> list[str]:
    """The modules ``path`` imports, by absolute name; ``from a import b`` counts as ``a`` and ``a.b``."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names.append(module)
            names.extend(f"{module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("files", sorted(FORBIDDEN))
def test_no_module_imports_across_a_forbidden_line(files):
    paths = sorted(ROOT.glob(files))
    assert paths, f"{files} matches no file"
    crossings = []
    for path in paths:
        package = ".".join(path.relative_to(ROOT).parent.parts)
        for name in _imports(path, package):
            if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[files]):
                crossings.append(f"{path.relative_to(ROOT)} imports {name}")
    assert crossings == []


def test_the_architecture_page_states_these_rules():
    """docs/architecture.md's table is this file's FORBIDDEN, row for row (``broker/common``'s row
    says "every other part of broker", which ``_broker_parts_except`` computes)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page[page.index("| Files | Must never import |") :].split("\n\n", 1)[0].splitlines()[2:]
    stated = {}
    for row in table:
        files, banned = (cell.strip() for cell in row.strip("|").split("|"))
        glob = files.split("`")[1]
        names = tuple(banned.split("`")[1::2])
        stated[glob] = _broker_parts_except("broker.common") if names == ("broker",) else names
    assert stated.keys() == FORBIDDEN.keys()
    for glob, banned in FORBIDDEN.items():
        assert set(stated[glob]) == set(banned), glob
