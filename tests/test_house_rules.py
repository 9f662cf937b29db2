"""The house rules the code keeps (issue 30), checked on every run so they cannot erode one change at a time:
small modules, long functions that say why they are one piece, no re-export facades, every engine
wait in the one timing object (:mod:`eagletui.core.timings`), and no idiom that drops a cancellation.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE = sorted(
    p
    for d in ("eagletui", "benchmarks", "tools")
    for p in (ROOT / d).rglob("*.py")
    if "__pycache__" not in p.parts
)
#: written by tools/flagtables/build.py from the real parser's table: data, not hand-written code
GENERATED = {ROOT / "eagletui" / "core" / "servers" / "sglang_flagtable.py"}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("path", [p for p in CODE if p not in GENERATED], ids=_rel)
def test_no_hand_written_module_is_over_600_lines(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{_rel(path)}: {lines} lines; split it by what it holds"


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def test_a_function_over_80_lines_says_why_it_is_one_piece() -> None:
    long = []
    for path in CODE:
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            n = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if n > MAX_FUNCTION_LINES and "One piece:" not in (ast.get_docstring(fn) or ""):
                long.append(f"{_rel(path)}:{fn.lineno} {fn.name} ({n} lines)")
    assert long == [], "split them, or say in the docstring why each is one piece ('One piece: …')"


def test_no_module_hands_on_names_it_imported() -> None:
    """No ``__getattr__`` at module level, no ``import x as x``, no import after the code (the ways a
    module becomes a facade that others import through); mypy's ``implicit_reexport = false`` catches
    the rest (an importer naming a module that only imports the name)."""
    found = []
    for path in CODE:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                found.append(f"{_rel(path)}:{node.lineno} module-level __getattr__")
            if isinstance(node, ast.ImportFrom):
                found += [
                    f"{_rel(path)}:{node.lineno} import {a.name} as {a.asname}" for a in node.names if a.asname == a.name
                ]
        if "noqa: E402" in text and path.parts[len(ROOT.parts)] == "eagletui":  # scripts set sys.path first
            found.append(f"{_rel(path)}: an import below the code (noqa: E402)")
    assert found == []


#: Where the engine waits: every number here comes from the command's timings, none is a default of
#: its own. (The simulator is the server's stand-in, the UI's repaint cadences are drawing, the
#: host-side programs run on the host with the numbers they are sent, and core/ waits for nothing: its
#: numbers are thresholds of judgement and the profile's own defaults.)
ENGINE = [
    p
    for p in CODE
    if p.parts[len(ROOT.parts)] == "eagletui"
    and not {"sim", "ui", "core"} & set(p.parts)
    and p.name not in ("timings.py",)
    and not p.name.startswith("host")
]
_WAIT_NAME = re.compile(r"(^|_)(timeout|interval|grace|stale|poll|delay|backoff|wait|keepalive|settle)(_|$)|_s$")


@pytest.mark.parametrize("path", ENGINE, ids=_rel)
def test_engine_waits_come_from_the_timings(path: Path) -> None:
    """No keyword default, module constant or sleep in the engine holds a number of seconds of its own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            named = args.args[len(args.args) - len(args.defaults) :] + args.kwonlyargs
            defaults = list(args.defaults) + list(args.kw_defaults)
            for a, d in zip(named, defaults, strict=False):
                if isinstance(d, ast.Constant) and isinstance(d.value, float) and _WAIT_NAME.search(a.arg):
                    found.append(f"{node.name}({a.arg}={d.value})")
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper() and isinstance(node.value, ast.Constant) and isinstance(node.value.value, float):
                if _WAIT_NAME.search(name.lower()):
                    found.append(f"{name} = {node.value.value}")
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "sleep" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int | float) and arg.value > 0.05:
                found.append(f"sleep({arg.value}) at line {node.lineno}")
    assert found == [], f"{_rel(path)}: put these in eagletui.core.timings and pass them down"


#: code a cancellation must get through (SIGTERM, SIGHUP and Ctrl-C cancel a command's main task, the UI's
#: stop its benchmark): all of eagletui but the simulator, which stands alone
CANCELLABLE = [p for p in CODE if p.parts[len(ROOT.parts)] == "eagletui" and "sim" not in p.parts]


def test_no_idiom_that_drops_a_cancellation() -> None:
    """Neither idiom that dropped a SIGTERM on its way (a CI rehearsal benchmarked 45 repeats on after
    "SIGTERM: stopping"; :mod:`eagletui.remote.cancel` says how each does it): Python 3.11's
    ``asyncio.wait_for`` and a ``suppress`` of ``CancelledError``."""
    found = []
    for path in CANCELLABLE:
        text = path.read_text(encoding="utf-8")
        if "wait_for" not in text and "CancelledError" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "wait_for" and isinstance(f, ast.Attribute) and ast.unparse(f.value) == "asyncio":
                found.append(f"{_rel(path)}:{node.lineno}: asyncio.wait_for (use asyncio.timeout)")
            if name == "suppress" and any("CancelledError" in ast.unparse(a) for a in node.args):
                found.append(f"{_rel(path)}:{node.lineno}: suppress(CancelledError) (use cancel_and_wait)")
    assert found == [], "\n".join(found)
