"""Runs ``explore.ipynb`` headless from top to bottom (a real broker, Spark and loads, as the tests
run it) and saves its first plot, page views per minute by page, as ``page-views-per-minute.png``
next to it, for the README (``make notebook-plot``), in 32 colours to keep the committed file small
(Pillow, which matplotlib installs). The notebook file itself is left unchanged."""

import base64
import io
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from PIL import Image

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "explore.ipynb"
PLOT = HERE / "page-views-per-minute.png"


def first_plot(notebook) -> bytes:
    """The PNG bytes of the first image a code cell of the executed ``notebook`` shows."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                return base64.b64decode(output["data"]["image/png"])
    raise SystemExit(f"{NOTEBOOK.name} drew no plot")


def compact(png: bytes) -> bytes:
    """``png`` with its colours reduced to a palette of 32, which a line plot does not miss."""
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=32).save(out, format="PNG", optimize=True)
    return out.getvalue()


def main() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    with tempfile.TemporaryDirectory(prefix="kafkalog-notebook-plot-") as workdir:
        NotebookClient(
            notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": workdir}}
        ).execute()
    PLOT.write_bytes(compact(first_plot(notebook)))
    print(
        f"wrote {PLOT.relative_to(Path.cwd()) if PLOT.is_relative_to(Path.cwd()) else PLOT} "
        f"({PLOT.stat().st_size:,} bytes)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
