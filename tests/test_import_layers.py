"""The session model, the drivers and the headless bench run with no Textual loaded: what lets
``eagletui bench`` (and a future sweep) reuse the UI's model without dragging the UI in."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import eagletui.core.profile.staged, eagletui.session.model, eagletui.session.drivers, eagletui.commands.bench
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext') or m.startswith('eagletui.ui'))
print(bad)
raise SystemExit(1 if bad else 0)
"""


def test_model_drivers_and_bench_import_no_ui() -> None:
    res = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
