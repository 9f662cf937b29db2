"""The registry of server log formats (see :mod:`eagletui.core.logs.seam`). The first is the default.

Adding a server: one package beside ``sglang/`` and ``vllm/`` with a
:class:`~eagletui.core.logs.seam.LogFormat` subclass (its line classifier mapping lines onto the tags
documented in :mod:`eagletui.core.logs.seam`, its launch facts and its failure table; anything else
only if the server has it), then its line here.
"""

from __future__ import annotations

from eagletui.core.logs.formats.sglang import SGLANG
from eagletui.core.logs.formats.vllm import VLLM
from eagletui.core.logs.seam import LogFormat

FORMATS: list[LogFormat] = [SGLANG, VLLM]

__all__ = ["FORMATS"]
