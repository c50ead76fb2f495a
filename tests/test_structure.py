"""The surfaces stay split by resource (issue 52): no file of arag.serve over 500 lines, no function over 85, no
helper taking more than 6 positional parameters (a typer command's options are its command line, not a helper's)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVE = Path(__file__).resolve().parent.parent / "src" / "arag" / "serve"


def _functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for path in sorted(SERVE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((path, node))
    return found


def _is_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ("command", "callback")
        for d in node.decorator_list
    )


def test_no_file_of_the_surfaces_is_long() -> None:
    long = {str(p.relative_to(SERVE)): n for p in SERVE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert not long


def test_no_function_of_the_surfaces_is_long_or_takes_many_positional_parameters() -> None:
    long = [f"{p.name}:{f.name} {f.end_lineno - f.lineno + 1} lines" for p, f in _functions()
            if (f.end_lineno or f.lineno) - f.lineno + 1 > 85]  # fmt: skip
    assert not long
    many = [f"{p.name}:{f.name}" for p, f in _functions()
            if not _is_command(f) and len(f.args.posonlyargs) + len(f.args.args) > 6]  # fmt: skip
    assert not many
