"""The type stub of the native module lists exactly what the module has."""

from __future__ import annotations

import ast
from pathlib import Path

import quiclab
from quiclab import _native

STUB = Path(quiclab.__file__).with_name("_native.pyi")


def _stub_names() -> dict[str, set[str]]:
    """Top-level names of the stub, and each class's members."""
    tree = ast.parse(STUB.read_text())
    names: dict[str, set[str]] = {"": set()}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[""].add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[""].add(node.target.id)
        if isinstance(node, ast.ClassDef):
            names[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef)
            } | {
                n.target.id
                for n in node.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            }
    return names


def test_stub_matches_the_native_module() -> None:
    stub = _stub_names()
    public = {n for n in dir(_native) if not n.startswith("_")} | {"__version__"}
    assert stub[""] == public
    for cls in ("NativeScenario", "NativeOpenSweep"):
        members = {n for n in dir(getattr(_native, cls)) if not n.startswith("_")}
        assert stub[cls] == members, cls
