"""The outer prefix a file puts in front of every line, learned from the file itself.

Server logs reach people through other programs, and each adds its own prefix to every line: docker
compose (``svc-1  | ``), a log shipper or ``docker logs -t`` (an RFC 3339 time), CRI (``… stdout F ``),
journald (``Aug 19 18:34:27 host python3[8727]: ``), Ray (``(Engine pid=952, ip=…) ``), a Python
wrapper re-emitting its child (``2024-08-27 12:54:55 | ERROR | stderr | ``), NVIDIA Dynamo
(``2025-11-05T01:56:54.243403Z  INFO ``), often two of them nested. A list of known wrappers misses the
next one; instead this module learns, from the first lines of the file, the part in front of the
server's own line shape that most lines share, and cuts it off before the format classifies a line.

How a line votes: its *head* is the text before the server's own record start (the format's
``record_start``) or before text no wrapper writes (a Python traceback line, uvicorn's ``INFO:     ``,
NCCL's ``host:pid:tid [dev] NCCL``). Progress bars do not vote (their description is their own text, and
a wrapper may or may not precede them). A head becomes a shape: digits are any number, level words any
level, ``stdout``/``stderr`` either stream, colour codes any colour, whitespace any run; the learned
prefix is the longest shape ending in whitespace that at least 60 % of the voting lines (and two of
them) start with. A format whose records may be nested in a copy of their own start (a ``[date time]``
printed by a wrapper in front of the server's ``[date time TP0]``) says so with ``nested``: then the
first of two adjacent record starts is the wrapper's.

The reader decides after :data:`LEARN_LINES` voting lines, or as soon as the file starts with the
server's own record (for a nested format only a start with the part no wrapper copies, the pattern's
``own`` group: its ``[time] text`` may be a wrapper's time in front of plain text): the file is not wrapped. Lines read before the decision are held and handed back with it, so every line is cut alike
however the text was chunked (a live tail shows a wrapped file's first lines a few lines late). Pure:
lines in, offsets out.
"""

from __future__ import annotations

import math
import re
from typing import Any

from eagletui.core.logs.seam import SCAN_LIMIT

#: Voting lines read before the prefix is decided (the lines are held until then).
LEARN_LINES = 8
#: A head is read from at most this many characters, and a prefix is at most this long.
HEAD_LIMIT = 240
#: The share of voting lines the prefix must begin, and the fewest lines.
SUPPORT = 0.6
MIN_LINES = 2
#: Nested shapes kept (``svc | INFO 03-08 12:29:00 `` and ``svc | ``: a line takes the longest that fits).
MAX_SHAPES = 4

#: Text no wrapper writes, at the place it starts: a traceback, a frame, uvicorn, NCCL's own prefix.
CONTENT_RE = re.compile(
    r"Traceback \(most recent call last\)"
    r"|File \"[^\"\n]{1,400}\", line \d"
    r"|(?:INFO|ERROR|WARNING|DEBUG|CRITICAL):\s{2,}"
    r"|[\w.-]{1,64}:\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL "
    r"|NCCL (?:INFO|WARN) "
    r"|frame #\d+: "
    r"|\d{1,3} 0x[0-9a-f]{6,16} |={4} backtrace"  # a native backtrace (UCX's handler): numbered frames
)
#: A progress-bar frame (it does not vote).
_BAR_RE = re.compile(r"\d{1,3}%\||% Completed \||\d+/\d+ \[[\d:?]{4,12}<")

_LEVELS = ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL", "NOTICE", "TRACE")
_STREAMS = ("stdout", "stderr")
_TOKEN_RE = re.compile(r"\x1b\[[0-9;]{0,32}m|\d+|[^\W\d_]+|[ \t]+|.", re.S)
_SGR_PAT = r"\x1b\[[0-9;]{0,32}m"
_LEVEL_PAT = "(?:" + "|".join(sorted(_LEVELS, key=len, reverse=True)) + ")"
_STREAM_PAT = "(?:stdout|stderr)"

#: A token's key: its class for the variable ones, its text for the rest.
Token = tuple[str, str]


def tokens(head: str) -> list[Token]:
    """The shape of a head: ``("D", "")`` digits, ``("L", "")`` a level, ``("S", "")`` a stream,
    ``("E", "")`` a colour code, ``("_", "")`` whitespace, ``("=", text)`` anything else."""
    out: list[Token] = []
    for t in _TOKEN_RE.findall(head):
        c = t[0]
        if c.isdigit():
            out.append(("D", ""))
        elif c == "\x1b":
            out.append(("E", ""))
        elif c in " \t":
            out.append(("_", ""))
        elif t in _LEVELS:
            out.append(("L", ""))
        elif t in _STREAMS:
            out.append(("S", ""))
        else:
            out.append(("=", t))
    return out


def _pattern(shape: tuple[Token, ...]) -> re.Pattern[str]:
    parts = []
    last = len(shape) - 1
    for i, (k, text) in enumerate(shape):
        if k == "D":
            parts.append(r"\d+")
        elif k == "E":
            parts.append(_SGR_PAT)
        elif k == "_":
            # a run inside the prefix; the separator that ends it is one character (the text after it
            # keeps its own indentation)
            parts.append("[ \t]" if i == last else "[ \t]+")
        elif k == "L":
            parts.append(_LEVEL_PAT)
        elif k == "S":
            parts.append(_STREAM_PAT)
        else:
            parts.append(re.escape(text))
    return re.compile("".join(parts))


def _plausible(shape: tuple[Token, ...]) -> bool:
    """A wrapper's prefix: starts in the first column, ends in whitespace, names something (a number, a
    word, a level) or is a pane's border (:func:`_frame`), and is not a source location (``…/x.py:63: `` shared by two warnings is the
    warnings' text)."""
    if not shape or shape[-1][0] != "_" or shape[0][0] == "_":
        return False
    if not any(k in "DLS" or (k == "=" and text[:1].isalpha()) for k, text in shape) and not _frame(shape):
        return False
    text = "".join(t for _, t in shape)
    if ".py" in text or "File" in text:
        return False
    # a wrapper's prefix is whole: every bracket it opens it closes (``<font `` of a pasted HTML tag is not)
    return all(text.count(a) == text.count(b) for a, b in ("()", "[]", "<>", "{}"))


#: The vertical box-drawing strokes a viewer draws down the left of a pane (k9s, a TUI, rich's panels).
_STROKES = frozenset("│┃║╎╏┆┇┊┋")


#: A pane's right border: a stroke at the end of the line after the padding.
_RIGHT_BORDER_RE = re.compile("[ \t]*[" + "".join(sorted(_STROKES)) + "][ \t]*$")


def _frame(shape: tuple[Token, ...]) -> bool:
    """A pane's left border: nothing but vertical strokes and the spaces between them (``│ │ ``). It names
    nothing, but no server writes it: a log viewer framed the lines (a tokenizer traceback copied from a
    pane, in the q34 held-out set)."""
    return all(k == "_" or (k == "=" and text in _STROKES) for k, text in shape) and any(
        k == "=" for k, _ in shape
    )


def _shapes(heads: list[list[Token]], voters: int) -> list[tuple[Token, ...]]:
    """The plausible shapes ending in whitespace that enough voting lines' heads begin with, longest first."""
    need = max(MIN_LINES, math.ceil(SUPPORT * voters))
    counts: dict[tuple[Token, ...], int] = {}
    for head in heads:
        for i, (k, _) in enumerate(head):
            if k == "_":
                key = tuple(head[: i + 1])
                counts[key] = counts.get(key, 0) + 1
    return sorted((key for key, n in counts.items() if n >= need and _plausible(key)), key=len, reverse=True)


def _alternatives(shapes: list[tuple[Token, ...]]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{_pattern(key).pattern})" for key in shapes))


def learn(heads: list[list[Token]], voters: int) -> re.Pattern[str] | None:
    """The shapes ending in whitespace that enough voting lines' heads begin with, the longest first,
    as one pattern (a line takes the longest that fits: a wrapper's prefix alone where the line does
    not go on as the lines learned from did), or None."""
    shapes = _shapes(heads, voters)
    return _alternatives(shapes[:MAX_SHAPES]) if shapes else None


def learn_bare(heads: list[list[Token]], voters: int) -> re.Pattern[str] | None:
    """Every learned shape, to recognise a line that is nothing but a wrapper's prefix (a blank line
    an outer wrapper printed its own prefix for, in front of no inner one)."""
    shapes = _shapes(heads, voters)
    return _alternatives(shapes) if shapes else None


class OuterPrefix:
    """One file's outer prefix: held lines while it is learned, then the length to cut off each line.

    ``record_start`` is the format's own record start (None: the format has none, nothing is learned
    and nothing held); ``nested`` as in the module docstring.
    """

    __slots__ = (
        "record_start", "nested", "pattern", "bare", "framed", "learning", "held", "heads", "voters", "provisional"
    )

    def __init__(self, record_start: Any = None, nested: bool = False) -> None:
        self.record_start = record_start
        self.nested = nested
        self.pattern: re.Pattern[str] | None = None
        self.bare: re.Pattern[str] | None = None
        #: the learned prefix is a pane's left border: a right border may end the lines (:meth:`trail`)
        self.framed = False
        self.learning = record_start is not None
        self.held: list[tuple[str, bool]] = []
        self.heads: list[list[Token]] = []
        self.voters = 0
        #: decided early by a live tail (fewer than LEARN_LINES voting lines): the next lines still vote,
        #: and the decision is made again when they are enough (:meth:`observe`)
        self.provisional = False

    def cut(self, seg: str) -> int:
        """How many leading characters of ``seg`` are the learned wrapper's (0 when none)."""
        p = self.pattern
        if p is None:
            return 0
        m = p.match(seg, 0, HEAD_LIMIT)
        if m is None and len(seg) < HEAD_LIMIT and seg.strip() and self.bare is not None:
            # a blank line the wrapper printed its prefix for (its trailing space stripped on the way)
            return len(seg) if self.bare.fullmatch(seg.rstrip() + " ") is not None else 0
        return 0 if m is None else m.end()

    def offer(self, seg: str, after_cr: bool) -> list[tuple[str, bool]]:
        """A segment read while learning: the segments to handle now (held ones first, in order); an
        empty list while the line is held."""
        self.held.append((seg, after_cr))
        head = self._head(seg) if not after_cr else None
        if head is not None:
            self.voters += 1
            if head:
                self.heads.append(tokens(head))
            elif not self.heads and self._own_at_start(seg):
                # the server writes the file itself: nothing to learn (for a nested format only a start
                # with the part no wrapper copies, the ``own`` group: ``[time] text`` may be a
                # wrapper's time in front of plain text)
                return self.decide()
            if self.voters >= LEARN_LINES:
                return self.decide()
        if len(self.held) >= 8 * LEARN_LINES:  # a long run of bars: stop holding
            return self.decide()
        return []

    def decide(self, provisional: bool = False) -> list[tuple[str, bool]]:
        """End the learning (at the latest at the end of input) and hand back the held segments.

        ``provisional``: a live tail decides at the end of each read rather than hold what it shows;
        with fewer than :data:`LEARN_LINES` voting lines the later lines go on voting (:meth:`observe`)
        and the prefix is decided again from all of them, as the whole file would decide it."""
        if self.learning:
            self.learning = False
            self._learn()
            self.provisional = provisional and self.voters < LEARN_LINES
            if not self.provisional:
                self.heads = []
        held, self.held = self.held, []
        return held

    def _learn(self) -> None:
        self.pattern = learn(self.heads, self.voters) if self.voters else None
        self.bare = learn_bare(self.heads, self.voters) if self.pattern is not None else None
        self.framed = self.pattern is not None and any(_frame(k) for k in _shapes(self.heads, self.voters)[:MAX_SHAPES])

    def trail(self, seg: str) -> int:
        """Where the pane's right border begins at the end of ``seg`` (``len(seg)`` when there is none, or
        the file is not framed): a viewer that frames both sides pads each line to the pane's width
        (k9s: ``│ INFO … text          │``, kubernetes-sigs/gateway-api-inference-extension#550)."""
        if not self.framed:
            return len(seg)
        m = _RIGHT_BORDER_RE.search(seg)
        return len(seg) if m is None else m.start()

    def observe(self, seg: str, after_cr: bool) -> None:
        """A segment read after a provisional decision: it votes; with :data:`LEARN_LINES` voting lines
        the prefix is decided again (for the lines that follow: those shown stay as they were)."""
        head = self._head(seg) if not after_cr else None
        if head is None:
            return
        self.voters += 1
        if head:
            self.heads.append(tokens(head))
        if self.voters >= LEARN_LINES:
            self._learn()
            self.provisional = False
            self.heads = []

    def nothing_to_learn(self) -> bool:
        """No line read so far could carry a wrapper's prefix (none has a plausible shape in front of
        its text): a live tail need not hold them any longer."""
        return self.voters > 0 and not any(
            k == "_" and _plausible(tuple(h[: i + 1])) for h in self.heads for i, (k, _) in enumerate(h)
        )

    def _own_at_start(self, seg: str) -> bool:
        m = self.record_start.match(seg, 0, SCAN_LIMIT)
        return m is not None and (not self.nested or bool(m.groupdict().get("own")))

    def _outer_copy(self, line: str, end: int) -> bool:
        """A record start ending at ``end`` is a wrapper's copy of the server's: another record start,
        a traceback line or indented text follows it (the server never writes those behind its own)."""
        at = end + (line[end : end + 1] == " ")
        return (
            self.record_start.match(line, at) is not None
            or line[at : at + 1] in (" ", "\t")
            or line.startswith(("Traceback (most recent", 'File "'), at)
        )

    def copies_record(self, wrapper: str) -> bool:
        """The cut-off text is a copy of the server's own record start (a nested format's wrapper)."""
        return self.nested and self.record_start.match(wrapper) is not None

    def _head(self, seg: str) -> str | None:
        """The text in front of the server's record or of text no wrapper writes ("" when the line
        starts with one); None for a line that does not vote (blank, or a progress bar)."""
        line = seg[:HEAD_LIMIT]
        if not line.strip():
            return None
        end = len(line)
        m = self.record_start.search(line)
        if m is not None:
            end = m.start()
            if self.nested and self._outer_copy(line, m.end()):
                end = m.end() + (line[m.end() : m.end() + 1] == " ")
        c = CONTENT_RE.search(line, 0, end)
        if c is not None:
            end = c.start()
        if end == len(line) and _BAR_RE.search(line):
            return None
        if end == len(line) and len(seg) > HEAD_LIMIT:
            end = HEAD_LIMIT
        return line[:end]
