"""SGLang's serving lines (Decode/Prefill batch): field parsers and the fast-path patterns.

The live tail matches a whole serving line with one regex (:data:`SERVING_LINE_RE`, groups by
:class:`ServingGroups` index); ``eagletui parse`` scans runs of serving lines in bulk
(:func:`serving_scan_re`). Both decide a line exactly as the per-line classifier does.
"""

from __future__ import annotations

import re
from typing import Any

from eagletui.core.logs.formats.sglang.prefix import PREFIX_RE, tp_of
from eagletui.core.logs.seam import FastPath

# Decode line: a strict one-shot regex for the common layouts (fast path) and the version-robust
# regex from the reference, whose middle part is then read key by key.
DECODE_FAST_RE = re.compile(
    r"Decode batch(?: \[\d+\])?[.,] #running-req: (\d+), #token: (\d+), token usage: ([\d.]+), "
    r"(?:accept len: ([\d.]+), (?:accept rate: ([\d.]+), )?)?(?:(?:cuda|cpu|npu|musa) graph: (True|False), )?"
    r"gen throughput \(token/s\): ([\d.]+), #queue-req: (\d+)"
)
DECODE_RE = re.compile(
    r"Decode batch(?: \[\d+\])?[.,] #running-req: (\d+), (.*?)gen throughput \(token/s\): ([\d.]+), "
    r"#queue-req: (\d+)"
)
# Bulk scan for ``eagletui parse`` (LogInterpreter.feed_bulk). One match = the serving lines that the
# per-line serving fast path (LogInterpreter._line) skips, then one more line: a Decode line it
# accepts (groups: message, accept len, gen throughput), or any other line (group 4, without its
# newline), or the end of the range. Every line start therefore matches, so ``findall`` over a range
# of complete lines is contiguous and returns the range's lines in order. Lines are decided exactly as
# the per-line path decides them:
#   * ``INFO:     …HTTP/1.…`` is an access line (checked first), and so is one whose first ``]`` (at
#     most 385 characters in) is followed by `` INFO:     `` (uvicorn behind SGLang's own timestamp);
#   * otherwise the first ``]`` of the line, at most 385 characters in, must be the serving marker (so
#     it is the earliest ``] Decode batch`` / ``] Prefill batch`` and lies in the 400-character window);
#   * a Prefill line is skipped whatever follows the marker; a Decode line must match a subset of
#     DECODE_FAST_RE whose numbers always convert (ASCII ``\d+\.?\d*``) and whose length stays far below
#     SCAN_LIMIT. Anything else (hybrid ``#full token`` lines, odd numbers) comes back in group 4.
# ``.`` never matches ``\n``; callers keep ``\r`` out of the scanned range.
#
# Optional parts cost a lot in ``re``, so scans use a pattern specialised to one Decode layout (the
# optional fields of DECODE_FAST_RE present or not); Decode lines of another layout then come back as
# other lines, which is slower but still exact. ``serving_scan_re`` picks the layout from a sample line.
_BULK_NUM = r"\d{1,20}\.?\d{0,20}"
_BULK_SKIP = r"(?:INFO:     .*HTTP/1\..*\n|[^\]\n]{0,385}+\] (?:Prefill batch.*|INFO:     .*HTTP/1\..*)\n)*+"
_BULK_PFX = r"[^\]\n]{0,385}+\] "
_LAYOUT_RE = re.compile(
    r"Decode batch( \[\d+\])?([.,]) #running-req: \d+, #token: \d+, token usage: [\d.]+, "
    r"(accept len: [\d.]+, (accept rate: [\d.]+, )?)?(?:(cuda|cpu|npu|musa) graph: (?:True|False), )?"
    r"gen throughput"
)
_SCAN_CACHE: dict[tuple[Any, ...], re.Pattern[Any]] = {}


def _scan_re(layout: tuple[Any, ...] | None, binary: bool) -> re.Pattern[Any]:
    key = (layout, binary)
    pat = _SCAN_CACHE.get(key)
    if pat is not None:
        return pat
    n = _BULK_NUM
    if layout is None:  # every layout, slower
        head = r"Decode batch(?: \[\d{1,12}\])?[.,] "
        accept = r"(?:accept len: (" + n + r"), (?:accept rate: " + n + r", )?)?"
        graph = r"(?:(?:cuda|cpu|npu|musa) graph: (?:True|False), )?"
    else:
        it, sep, acc_len, acc_rate, dev = layout
        head = "Decode batch" + (r" \[\d{1,12}\]" if it else "") + re.escape(sep) + " "
        accept = "()"  # group 2 stays empty
        if acc_len:
            accept = r"accept len: (" + n + r"), " + (r"accept rate: " + n + r", " if acc_rate else "")
        graph = dev + r" graph: (?:True|False), " if dev else ""
    src = (
        _BULK_SKIP + r"(?:" + _BULK_PFX + "(" + head + r"#running-req: \d{1,12}, #token: \d{1,15}, "
        r"token usage: " + n + ", " + accept + graph + r"gen throughput \(token/s\): (" + n + r"), "
        r"#queue-req: \d{1,12}).*\n|(.*)\n|\Z)"
    )
    if binary:
        # Same set as [^\]\n] on bytes, spelled as ranges so ``re`` tests it with a bitmap (faster).
        src = src.replace(r"[^\]\n]", r"[\x00-\x09\x0b-\x5c\x5e-\xff]")
    pat = re.compile(src.encode() if binary else src, re.ASCII)
    if len(_SCAN_CACHE) < 64:
        _SCAN_CACHE[key] = pat
    return pat


def serving_scan_re(sample: str, binary: bool = False) -> re.Pattern[Any]:
    """The bulk scan pattern for the Decode layout of ``sample`` (a Decode message), else the general one.

    ``binary``: the same pattern over UTF-8 bytes (limits then count bytes, a subset of the text's).
    """
    m = _LAYOUT_RE.match(sample)
    if m is None:
        return _scan_re(None, binary)
    it, sep, acc_len, acc_rate, dev = m.groups()
    return _scan_re((bool(it), sep, bool(acc_len), bool(acc_rate), dev or ""), binary)


PREFILL_FAST_RE = re.compile(
    r"Prefill batch(?:\(mixed #running-req: \d+\))?(?: \[\d+\])?[.,] #new-seq: (\d+), #new-token: (\d+), "
    r"#cached-token: (\d+), (?:cache hit rate: [\d.]+%, )?(?:token usage: [\d.]+, )?"
    r"(?:#running-req: (\d+), )?#queue-req: (\d+)"
)
# Any Prefill layout (hybrid pools print ``full token usage: …, swa token usage: …`` or ``mamba usage:``
# where plain models print ``token usage:``): the middle is read key by key, like DECODE_RE's.
PREFILL_RE = re.compile(
    r"Prefill batch(?:\(mixed #running-req: \d+\))?(?: \[\d+\])?[.,] #new-seq: (\d+), #new-token: (\d+), "
    r"#cached-token: (\d+), (.*?)#queue-req: (\d+)"
)
_INPUT_TPUT_RE = re.compile(r"input throughput \(token/s\): ([\d.]+)")
# A whole serving line for the live fast path (LogInterpreter._live): PREFIX_RE matched at the start,
# then DECODE_FAST_RE or PREFILL_FAST_RE matched on the message. The prefix always ends at the line's
# first "]" (nothing before it admits one), so the combined match succeeds exactly when the two
# separate matches do, with the same groups: 0-5 prefix, 6-13 DECODE_FAST_RE groups (6 is set for a
# Decode line), 14-18 PREFILL_FAST_RE groups.
SERVING_LINE_RE = re.compile(
    PREFIX_RE.pattern + "(?:" + DECODE_FAST_RE.pattern + "|" + PREFILL_FAST_RE.pattern + ")"
)


class ServingGroups:
    """Indices into ``SERVING_LINE_RE.match(…).groups()`` (the live fast path reads groups by index:
    a tuple index is cheaper than ``group(name)``), derived from the three patterns it is built of."""

    __slots__ = ()
    _d = PREFIX_RE.groups
    _p = PREFIX_RE.groups + DECODE_FAST_RE.groups
    date = PREFIX_RE.groupindex["date"] - 1
    time = PREFIX_RE.groupindex["time"] - 1
    ms = PREFIX_RE.groupindex["ms"] - 1
    ranks = PREFIX_RE.groupindex["ranks"] - 1
    # DECODE_FAST_RE: running, #token, token usage, accept len, accept rate, graph, gen tput, queue.
    d_run, d_tok, d_usage, d_acc, d_rate, d_graph, d_gen, d_queue = range(_d, _d + 8)
    # PREFILL_FAST_RE: new seqs, new tokens, cached tokens, running, queue.
    p_seq, p_tok, p_cached, p_run, p_queue = range(_p, _p + 5)


assert DECODE_FAST_RE.groups == 8 and PREFILL_FAST_RE.groups == 5
SERVING_GROUPS = ServingGroups()
INPUT_THROUGHPUT_RE = _INPUT_TPUT_RE


def _num(s: str | None) -> float | None:
    return float(s) if s else None


def parse_decode(msg: str) -> dict[str, Any] | None:
    """Fields of a ``Decode batch`` line, or None if it is not complete (or a number is malformed)."""
    try:
        return _parse_decode(msg)
    except ValueError:  # "[\d.]+" admits "1.2.3"
        return None


def _parse_decode(msg: str) -> dict[str, Any] | None:
    m = DECODE_FAST_RE.match(msg)
    if m is not None:
        g = m.groups()
        return {
            "running_req": int(g[0]),
            "num_tokens": int(g[1]),
            "token_usage": float(g[2]),
            "accept_len": float(g[3]) if g[3] else None,
            "accept_rate": float(g[4]) if g[4] else None,
            "cuda_graph": None if g[5] is None else g[5] == "True",
            "gen_throughput": float(g[6]),
            "queue_req": int(g[7]),
        }
    m = DECODE_RE.match(msg)
    if m is None:
        return None
    mid: dict[str, str] = {}
    for part in m.group(2).split(", "):
        k, _, v = part.partition(": ")
        if v:
            mid[k] = v
    graph = None
    for k in ("cuda graph", "cpu graph", "npu graph", "musa graph"):
        if k in mid:
            graph = mid[k] == "True"
            break
    return {
        "running_req": int(m.group(1)),
        "num_tokens": _int(mid.get("#token") or mid.get("#full token")),
        "token_usage": _float(mid.get("token usage") or mid.get("full token usage")),
        "accept_len": _float(mid.get("accept len")),
        "accept_rate": _float(mid.get("accept rate")),
        "cuda_graph": graph,
        "gen_throughput": float(m.group(3)),
        "queue_req": int(m.group(4)),
    }


def parse_prefill(msg: str) -> dict[str, Any] | None:
    """Fields of a ``Prefill batch`` line, or None if it is not complete."""
    m = PREFILL_FAST_RE.match(msg)
    if m is None:
        m = PREFILL_RE.match(msg)
        if m is None:
            return None
        mid: dict[str, str] = {}
        for part in m.group(4).split(", "):
            k, _, v = part.partition(": ")
            if v:
                mid[k] = v
        run = _int(mid.get("#running-req"))
        g: tuple[str | None, ...] = (
            m.group(1),
            m.group(2),
            m.group(3),
            None if run is None else str(run),
            m.group(5),
        )
    else:
        g = m.groups()
    tput = None
    if "input throughput" in msg:
        t = _INPUT_TPUT_RE.search(msg)
        if t:
            tput = _float(t.group(1))
    return {
        "new_seq": int(g[0] or 0),
        "new_token": int(g[1] or 0),
        "cached_token": int(g[2] or 0),
        "running_req": int(g[3]) if g[3] else 0,
        "queue_req": int(g[4] or 0),
        "input_throughput": tput,
    }


def _int(s: str | None) -> int | None:
    try:
        return int(s) if s else None
    except ValueError:
        return None


def _float(s: str | None) -> float | None:
    try:
        return float(s) if s else None
    except ValueError:
        return None


class SGLangFastPath(FastPath):
    """SGLang's serving fast path: ``[time ranks] Decode batch …`` / ``Prefill batch …`` lines and
    uvicorn access lines, bare (``INFO:     …``) or behind the server's own timestamp."""

    line_first = ("[", "(")
    line_re = SERVING_LINE_RE
    prefix_ix = (SERVING_GROUPS.date, SERVING_GROUPS.time, SERVING_GROUPS.ms, SERVING_GROUPS.ranks)
    decode_ix = (
        SERVING_GROUPS.d_run,
        SERVING_GROUPS.d_tok,
        SERVING_GROUPS.d_usage,
        SERVING_GROUPS.d_acc,
        SERVING_GROUPS.d_rate,
        SERVING_GROUPS.d_graph,
        SERVING_GROUPS.d_gen,
        SERVING_GROUPS.d_queue,
    )
    prefill_ix = (
        SERVING_GROUPS.p_seq,
        SERVING_GROUPS.p_tok,
        SERVING_GROUPS.p_cached,
        SERVING_GROUPS.p_run,
        SERVING_GROUPS.p_queue,
    )
    prefix_re = PREFIX_RE
    prefix_close = "]"
    prefix_window = 386
    prefix_gap = 2
    access_prefix = "INFO:     "
    access_marker = "HTTP/1."
    access_tail = '" '
    decode_marker = "] Decode batch"
    prefill_marker = "] Prefill batch"
    marker_window = 400
    marker_skip = 2
    input_marker = "input throughput"
    input_re = INPUT_THROUGHPUT_RE
    eager_marker = " graph: False, "
    rank_of = staticmethod(tp_of)
    scan_re = staticmethod(serving_scan_re)
    parse_decode = staticmethod(parse_decode)
    parse_prefill = staticmethod(parse_prefill)


FAST_PATH = SGLangFastPath()
