"""What eagletui predicts from a real grid fixture, read the way the device script reads it: through
``tools/real-sglang/grid_eval.py --json`` (the book, forecasts and ranking the product uses). Shared by the
per-shape tests (tests/test_predict_real_*.py)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def grid_eval(grid: Path) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools/real-sglang/grid_eval.py"), str(grid), "--json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)  # type: ignore[no-any-return]
