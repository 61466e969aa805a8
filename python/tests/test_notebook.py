"""The example notebook runs from start to end and draws its figures."""

from __future__ import annotations

import time

import nbformat
from nbclient import NotebookClient

from conftest import REPO

#: Per-cell limit: the notebook's sweep takes seconds; a cell hanging fails the test instead.
CELL_TIMEOUT_S = 120


def test_analysis_notebook_runs_and_plots() -> None:
    nb = nbformat.read(REPO / "examples" / "analysis.ipynb", as_version=4)
    # Outputs saved in the file must not satisfy the checks below: start from none.
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    started = time.monotonic()
    NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(REPO / "examples")}},
    ).execute()
    elapsed = time.monotonic() - started
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) == 2
    # The goodput table has a row per (cc, loss) point: 2 × 4.
    table = next(o for o in outputs if "text/html" in o.get("data", {}) and "ci95_low" in o["data"]["text/html"])
    # (pandas writes the header row as <tr style=...>, data rows as <tr>.)
    assert table["data"]["text/html"].count("<tr>") == 8
    assert elapsed < 10 * CELL_TIMEOUT_S
