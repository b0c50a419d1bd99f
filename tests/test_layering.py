"""The layering of docs/architecture.md#layering, read from the source: which packages may import which. A module that
imports across a forbidden line fails here with its name and the import."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# package (a folder) -> the packages its modules must never import
FORBIDDEN = {
    "broker/records": ("broker.log", "broker.replica", "broker.cluster", "broker.server", "broker.client", "broker.cli"),
    "broker/protocol": ("broker.log", "broker.replica", "broker.cluster", "broker.server", "broker.client",
                        "broker.cli"),
    "broker/log": ("broker.replica", "broker.cluster", "broker.server", "broker.client", "broker.cli"),
    "broker/replica": ("broker.server", "broker.client", "broker.cli"),
    "broker/cluster": ("broker.server", "broker.client", "broker.cli"),
    "broker/coordinator": ("broker.server", "broker.client", "broker.cli"),
    "broker/server": ("broker.client", "broker.cli"),
    "broker/client": ("broker.server", "broker.cli"),
    "jobs": ("broker.server", "broker.cli"),
    "spark_kafka_source": ("broker.server", "broker.cli", "jobs"),
}


def _imports(path: pathlib.Path, package: str) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                names.append(".".join(base + ([node.module] if node.module else [])))
            else:
                names.append(node.module)
    return names


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_no_module_imports_across_a_forbidden_line(folder):
    crossings = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        package = ".".join(path.relative_to(ROOT).parent.parts)
        for name in _imports(path, package):
            if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[folder]):
                crossings.append(f"{path.relative_to(ROOT)} imports {name}")
    assert crossings == []
