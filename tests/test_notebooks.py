"""The notebooks run top to bottom in a real Jupyter kernel (nbclient), so they cannot rot; their
committed files carry no outputs; what they import is declared (the ``notebook`` extra, which the
README tells users to install, and the ``test`` extra, with which the suite executes them)."""

import ast
import configparser
import importlib.metadata
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"


def test_the_committed_notebooks_carry_no_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        kept = [c for c in notebook.cells if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert not kept, f"{path.name}: clear the outputs before committing ({len(kept)} cells have some)"


def executed(name: str, directory) -> tuple[int, str]:
    """Run notebook ``name`` top to bottom in a kernel working in ``directory``, checking no cell
    failed; (how many plots it drew, the text it printed)."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(directory)}}
    ).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    plots = sum("image/png" in o.get("data", {}) for o in outputs)
    return plots, "".join(o.get("text", "") for o in outputs)


@pytest.mark.timeout(600)
def test_explore_notebook_runs_top_to_bottom(tmp_path):
    plots, text = executed("explore.ipynb", tmp_path)
    assert plots >= 3, "the notebook draws events per minute, partition sizes and the lag"
    assert "superseded runs [2]" in text
    assert "micro-batch 3:" in text, "the stream reads the page views in micro-batches of 10,000"


@pytest.mark.timeout(600)
def test_cluster_notebook_runs_top_to_bottom(tmp_path):
    plots, text = executed("cluster.ipynb", tmp_path)
    assert plots >= 1, "the notebook draws the records on each broker"
    assert "tasks: 6" in text and text.count("no leader") == 2, text
    assert "exit code of the cluster's processes: 0" in text
    assert "Connection dropped" not in text and "Failed connecting" not in text, text  # kazoo's retries, silenced


def declared(setup: configparser.ConfigParser, section: str, key: str) -> set:
    """Distribution names of a requirement list of setup.cfg, normalised."""
    names = (
        re.match(r"[A-Za-z0-9._-]+", line.strip()).group()
        for line in setup[section][key].splitlines()
        if line.strip() and not line.strip().startswith("#")
    )
    return {re.sub(r"[-_.]+", "-", name).lower() for name in names}


def third_party_imports(path: Path, own: set) -> set:
    """Distributions providing the top-level modules a notebook's code cells import (not the
    standard library, not ``own``: this project's packages)."""
    modules = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Import):
                    modules |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module.split(".")[0])
    providers = importlib.metadata.packages_distributions()
    return {
        re.sub(r"[-_.]+", "-", dist).lower()
        for module in modules - own - set(sys.stdlib_module_names)
        for dist in providers[module]
    }


def test_what_the_notebooks_import_is_declared_for_users_and_for_the_tests():
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    runtime = declared(setup, "options", "install_requires")
    notebook, test = (declared(setup, "options.extras_require", extra) for extra in ("notebook", "test"))
    own = {name.split(".")[0] for name in setup["options.packages.find"]["include"].split()}
    assert {"ipykernel", "jupyterlab"} <= notebook, "a user opening the notebook needs a kernel and a front end"
    assert {"ipykernel", "nbclient"} <= test, "the tests execute the notebooks in a kernel"
    for path in NOTEBOOKS.glob("*.ipynb"):
        needed = third_party_imports(path, own)
        assert "matplotlib" in needed or path.name != "explore.ipynb", needed
        assert needed <= runtime | notebook, (
            f"{path.name} imports {sorted(needed - runtime - notebook)}: add them to the notebook extra of setup.cfg"
        )
        assert needed <= runtime | test, (
            f"{path.name} imports {sorted(needed - runtime - test)}: add them to the test extra of setup.cfg"
        )
