"""One switch for everything eagletui does to Textual beyond its public API.

Four speed-ups reach into Textual's internals (``restyle.StylesheetSpeedups``: the stylesheet's private
rule cache and ``Widget.refresh`` during a restyle; ``keypath``: a key handed to the bindings without
bubbling through each widget's queue; ``scrollbars``: a scrollbar's lines kept while what it draws is the
same) or take over process-wide runtime policy
(``gcpolicy.IdleCollector``: garbage collection). They are measured and tested on the Textual minor
versions in :data:`TESTED`; on any other version, or with ``EAGLETUI_TEXTUAL_PATCHES=0``, the app runs on
plain Textual (slower theme switches and keys, GC pauses under a log burst, same screens).
"""

from __future__ import annotations

import os
from functools import lru_cache

#: (major, minor) of the Textual releases the patches were measured and tested on.
TESTED: tuple[tuple[int, int], ...] = ((8, 2),)
ENV = "EAGLETUI_TEXTUAL_PATCHES"


def textual_version() -> tuple[int, int] | None:
    try:
        from importlib.metadata import version

        major, minor, *_ = version("textual").split(".")
        return int(major), int(minor)
    except Exception:
        return None


@lru_cache(maxsize=1)
def enabled() -> bool:
    """True when the speed-ups may run: a tested Textual and not switched off."""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "off", "false", "no"):
        return False
    return textual_version() in TESTED
