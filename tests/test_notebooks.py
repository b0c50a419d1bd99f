"""The notebooks run top to bottom in a real Jupyter kernel (nbclient), so they cannot rot; their
committed files carry no outputs."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_the_committed_notebooks_carry_no_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        kept = [c for c in notebook.cells if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert not kept, f"{path.name}: clear the outputs before committing ({len(kept)} cells have some)"


@pytest.mark.timeout(600)
def test_explore_notebook_runs_top_to_bottom(tmp_path):
    notebook = nbformat.read(NOTEBOOKS / "explore.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    plots = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(plots) >= 3, "the notebook draws events per minute, partition sizes and the lag"
    text = "".join(o.get("text", "") for o in outputs)
    assert "superseded runs [2]" in text
