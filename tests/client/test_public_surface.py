"""The client's public surface: what ``broker.client`` exports exists, and the code outside the
package (the Spark source, the jobs, the CLI, the benchmarks) imports only that, never a module
of the package, so the modules can move without touching their callers."""

import ast
import pathlib

import broker.client

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
CALLERS = ("spark_kafka_source", "jobs", "broker", "benchmarks", "pyspark_kafkalog")


def test_every_exported_name_exists():
    assert [name for name in broker.client.__all__ if not hasattr(broker.client, name)] == []


def _client_imports(path: pathlib.Path) -> list[str]:
    """``module: names`` of each import from ``broker.client`` or below, in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("broker.client"):
            found.append(f"{node.module}: {', '.join(alias.name for alias in node.names)}")
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("broker.client")]
    return found


def test_callers_import_only_the_public_surface():
    outside = [
        path
        for folder in CALLERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (ROOT / "broker" / "client") not in path.parents
    ]
    assert outside, "no caller found: the folders moved?"
    wrong = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in outside
        for found in _client_imports(path)
        if not found.startswith("broker.client: ")
        or not set(found.split(": ", 1)[1].split(", ")) <= set(broker.client.__all__)
    ]
    assert wrong == []
