"""Progress bars (tqdm) as servers print them: which text is a frame, where a frame ends.

Several servers draw the same tqdm bars (the safetensors shard bar is the same in SGLang and vLLM),
and every one of them shares its stderr with other writers, so a frame left without its newline gets
the next writer's line glued behind it. The helpers here know tqdm, not any server; a format passes
its own record start for the case where a frame has no ``[elapsed<remaining]`` tail to cut at.
"""

from __future__ import annotations

import re
from typing import Any

from eagletui.core.logs.seam import SCAN_LIMIT

#: Substrings of a tqdm frame in the layouts servers use (``% Completed |`` is vLLM's and SGLang's
#: shard bar, ``%|`` the default layout, the rates of a bar without a percentage).
BAR_MARKS = ("% Completed |", "%|", "it/s]", "s/it]")
#: ``n/total [elapsed<remaining, rate]``; the ``[`` guard keeps it off ordinary "a/b" text.
BAR_COUNT_RE = re.compile(r"(\d+)/(\d+) \[")
#: The end of a frame: ``[elapsed<remaining, rate]`` (``[00:16<15:54, 16.75s/it]``, ``[00:00<?, ?it/s]``).
BAR_TAIL_RE = re.compile(r"\[[\d:]{4,12}<[\d:?]{1,12}(?:, {0,4}[^\[\]\n]{0,40})?\]")


def is_bar(text: str) -> bool:
    """True for a tqdm frame (any of the layouts in :data:`BAR_MARKS`)."""
    head = text[:SCAN_LIMIT]
    return any(m in head for m in BAR_MARKS)


def bar_count(head: str) -> tuple[int, int] | None:
    """``(done, total)`` of a frame, None when it shows no ``n/total [``."""
    c = BAR_COUNT_RE.search(head)
    return None if c is None else (int(c.group(1)), int(c.group(2)))


_ELAPSED_RE = re.compile(r"\[(?:(\d{1,3}):)?(\d{1,2}):(\d{2})<")


def bar_elapsed(head: str) -> float | None:
    """Seconds a frame says have elapsed (``[01:43<…``, ``[1:02:03<…``), None when it does not say."""
    m = _ELAPSED_RE.search(head)
    if m is None:
        return None
    h, mi, s = m.groups()
    return (int(h) if h else 0) * 3600.0 + int(mi) * 60.0 + int(s)


def split_glued(segment: str, record_re: Any = None) -> list[str]:
    """Cut what other processes wrote after an unterminated bar frame off it.

    A frame ends with its ``[elapsed<remaining, rate]`` tail or, failing that, where ``record_re``
    (the server's record start) matches, so anything after it is a line of its own. Only bar frames
    are cut, so another program's prefix in front of a normal line stays with it.
    """
    out: list[str] = []
    rest = segment
    while True:
        head = rest[:SCAN_LIMIT]
        if not is_bar(head):
            out.append(rest)
            return out
        t = BAR_TAIL_RE.search(head)
        if t is not None and t.end() < len(rest):
            start = t.end()
        else:
            m = record_re.search(head, 1) if record_re is not None else None
            if m is None:
                out.append(rest)
                return out
            start = m.start()
        bar = rest[:start]
        if not is_bar(bar):
            out.append(rest)
            return out
        out.append(bar)
        rest = rest[start:]
