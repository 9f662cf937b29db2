"""The registry of server log formats (see :mod:`eagletui.core.logformat`). The first is the default.

Adding a server: one module beside ``sglang/`` and ``vllm.py`` with a
:class:`~eagletui.core.logformat.LogFormat` subclass (its line classifier mapping lines onto the tags
documented in :mod:`eagletui.core.logformat`, its launch facts and its failure table; anything else
only if the server has it), then its line here.
"""

from __future__ import annotations

from eagletui.core.formats.sglang import SGLANG
from eagletui.core.formats.vllm import VLLM
from eagletui.core.logformat import LogFormat

FORMATS: list[LogFormat] = [SGLANG, VLLM]

__all__ = ["FORMATS"]
