"""Known server log formats (see :mod:`eagletui.core.logformat`). The first is the default.

Adding a server: a package beside ``sglang/`` with its line classifier (mapping lines onto the tags
documented in :mod:`eagletui.core.logformat`), its failure table and hints, its version marks, and an
object with the :class:`~eagletui.core.logformat.LogFormat` members; then list it here.
"""

from __future__ import annotations

from eagletui.core.formats.sglang import SGLANG
from eagletui.core.logformat import LogFormat

FORMATS: list[LogFormat] = [SGLANG]

__all__ = ["FORMATS"]
