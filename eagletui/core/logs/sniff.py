"""Whose records a text is made of, for ``parse`` without ``--format``.

The registry's first format is the default, and the failure wordings a format knows are often no one
server's (torch's out-of-memory message, the CUDA driver's, a Python traceback): an excerpt made of another
format's records around such a line was read by the default, with the default server's flags in its hint
(three logs of the q34 held-out set; see docs/parse-json.md). Only a text the default read as ``unknown``
was offered to the other formats. Counting each format's own record starts (``LogFormat.record_start``) in
the first lines decides instead: a text with none of the default's and several of another's is that
other's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from eagletui.core.logs.seam import LogFormat

#: The first lines counted, and the characters of a line searched for a record start.
SNIFF_LINES = 400
SNIFF_HEAD = 300
#: The fewest record starts of another format that make the text its own (one line could be quoted).
MIN_RECORDS = 2


def records_owner(lines: Iterable[str], default: LogFormat, others: Sequence[LogFormat]) -> LogFormat | None:
    """The other format whose records the text is made of, or None (the default's reading stands: it has
    a record of its own, or no other format has :data:`MIN_RECORDS`). Several others: the one with the
    most records."""
    fmts = [default, *others]
    counts = [0] * len(fmts)
    for n, line in enumerate(lines):
        if n >= SNIFF_LINES:
            break
        head = line[:SNIFF_HEAD]
        for i, fmt in enumerate(fmts):
            if fmt.record_start is not None and fmt.record_start.search(head) is not None:
                counts[i] += 1
        if counts[0]:
            return None
    best = max(range(1, len(fmts)), key=lambda i: counts[i], default=None)
    if best is None or counts[best] < MIN_RECORDS:
        return None
    return fmts[best]
