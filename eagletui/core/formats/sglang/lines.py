"""Pure classifier for single SGLang log lines (versions 0.3.x – 0.5.23), part of the SGLang LogFormat.

A physical log line is first cut into logical lines (``\\r`` tqdm frames, other ranks' lines glued after
an unterminated bar frame), then each logical line becomes a :class:`Rec`: prefix fields, the message,
a coarse ``kind`` for display and a fine ``tag`` the phase machine and triage switch on.

Everything here is table-driven and guarded by cheap substring tests so that the common serving lines
(Decode/Prefill/HTTP access) never reach the long rule tables, and every regex runs on at most
:data:`SCAN_LIMIT` characters so a pathological 10 MB line costs a few microseconds, not minutes.
"""

from __future__ import annotations

import re
from typing import Any

from eagletui.core.logformat import (
    DECODE,
    ERROR,
    HTTP,
    OTHER,
    PHASE,
    PREFILL,
    PROGRESS,
    SCAN_LIMIT,
    TRACEBACK,
    WARNING,
    Rec,
)

# sglang's own prefix, optionally preceded by a Ray actor tag; searched anywhere in the line because
# docker-compose, journald or a Python logging handler may have written their own prefix in front.
# The date is ``YYYY-MM-DD`` (srt, 0.4.0+), ``MM-DD`` (the multimodal_gen diffusion runtime) or absent
# (0.3.x).
PREFIX_RE = re.compile(
    r"(?:\((?P<actor>\w+) pid=(?P<pid>\d+)(?:,\s*ip=[\d.]+)?\)\s*)?"
    r"\[(?P<date>(?:\d{4}-)?\d{2}-\d{2} )?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3}))?"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)

# tqdm: ``n/total [elapsed<remaining, rate]``; the `[` guard keeps it off ordinary "a/b" text.
_BAR_COUNT_RE = re.compile(r"(\d+)/(\d+) \[")
_BS_RE = re.compile(r"\bbs=(\d+)")
_NUM_TOKENS_RE = re.compile(r"num_tokens=(\d+)")
_AVAIL_RE = re.compile(r"avail_mem=([\d.]+ ?GB)")
_ELAPSED_RE = re.compile(r"elapsed=([\d.]+) ?s|Time elapsed: ([\d.]+) ?s")
_TYPE_RE = re.compile(r"type=(\w+)")

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

# argparse's "prog: error: ..." (prog may be "sglang serve" or a script path).
# Only argparse's own messages count: a compiler's "collect2: error: ld returned 1" is not a bad flag.
_ARGPARSE_RE = re.compile(
    r"^[\w./ -]{1,80}: error: (?:unrecognized arguments|the following arguments are required|argument |"
    r"ambiguous option|invalid choice|expected |one of the arguments|unrecognized )"
)
_EXC_LINE_RE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed))(?:: |$)"
)


# Message rules for prefixed lines: (substring, tag, kind). First match wins, so more specific
# wordings come before shorter ones that they contain.
MSG_RULES: tuple[tuple[str, str, str], ...] = (
    ("server_args=", "server_args", PHASE),
    ("Init nccl begin", "dist_begin", PHASE),
    ("Init torch distributed begin", "dist_begin", PHASE),
    ("Init parallel begin", "dist_begin", PHASE),
    ("Init torch distributed ends", "dist_end", PHASE),
    ("Init parallel ends", "dist_end", PHASE),
    ("Load weight begin", "load_begin", PHASE),
    ("Committed real weights", "load_commit", PHASE),
    ("Load weight end", "load_end", PHASE),
    ("KV Cache is allocated", "kv_alloc", PHASE),
    ("KV Cache VA upper bound", "kv_info", PHASE),
    ("Memory pool end", "pool_end", PHASE),
    ("max_total_num_tokens=", "summary", PHASE),
    ("Engine startup timings", "timings", PHASE),
    ("The server is fired up and ready to roll", "ready", PHASE),
)

_UVICORN_LEVELS = ("INFO:     ", "ERROR:    ", "WARNING:  ", "DEBUG:    ", "CRITICAL: ")
_UVICORN_FIRST = frozenset(lvl[0] for lvl in _UVICORN_LEVELS)

# Prefixes other programs put in front of every line of the server's output, in any nesting: docker
# compose (``sglang-1  | ``), container runtimes and log shippers (an RFC 3339 timestamp, CRI's
# ``stdout F ``), journald/syslog (``Aug 01 23:43:43 host python3[123]: ``), ``kubectl logs --prefix``
# (``[pod/name/container] ``) and a wrapper's own logging (``INFO sglang: ``, ``INFO:root:``). SGLang's
# own record start is found by PREFIX_RE.search; this is only for lines that have none (tracebacks,
# argparse output, warnings) so that what follows the foreign prefix is read as if it stood alone.
FOREIGN_PREFIX_RE = re.compile(
    r"(?:"
    r"[\w.-]{1,64} *\| ?"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?:? +(?:(?:stdout|stderr) [FP] )?"
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [\w.-]+ [\w.@/-]+(?:\[\d+\])?: "
    r"|\[pod/[^\]\s]{1,200}\] "
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?::[\w.]{1,64}:| [\w.]{1,64}: )"
    r")+"
)
_BAR_MARKS = ("% Completed |", "%|", "it/s]", "s/it]")
_SHARD_WORDS = (
    "checkpoint shards",
    "loading shards",
    "Loading safetensors",
    "Loading pt ",
    "Loading np_cache",
)
_CAPTURE_BAR_WORDS = ("Capturing batches", "Capturing prefill shape", "Capturing num tokens", "Capturing ")


def is_bar(text: str) -> bool:
    """True for a tqdm frame (any of the bar layouts SGLang and tqdm print)."""
    head = text[:SCAN_LIMIT]
    return any(m in head for m in _BAR_MARKS)


# The end of a tqdm frame: ``[elapsed<remaining, rate]`` (``[00:16<15:54, 16.75s/it]``, ``[00:00<?, ?it/s]``).
_BAR_TAIL_RE = re.compile(r"\[[\d:]{4,12}<[\d:?]{1,12}(?:, {0,4}[^\[\]\n]{0,40})?\]")


def split_glued(segment: str) -> list[str]:
    """Cut what other processes wrote after an unterminated bar frame off it.

    Eight processes share one stderr file; a tqdm frame without its newline gets the next writer's
    whole line glued behind it: another rank's log record, a Python warning, a traceback line. A frame
    ends with its ``[elapsed<remaining, rate]`` tail (or, failing that, where SGLang's next record
    starts), so anything after the tail is a line of its own. Only bar frames are cut, so a
    docker/journald prefix in front of a normal line stays with it.
    """
    out: list[str] = []
    rest = segment
    while True:
        head = rest[:SCAN_LIMIT]
        if not is_bar(head):
            out.append(rest)
            return out
        t = _BAR_TAIL_RE.search(head)
        if t is not None and t.end() < len(rest):
            start = t.end()
        else:
            m = PREFIX_RE.search(head, 1)
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


def classify(text: str, frame: bool = False) -> Rec:
    """Classify one logical line (no ``\\r``/``\\n`` inside)."""
    head = text if len(text) <= SCAN_LIMIT else text[:SCAN_LIMIT]
    m = None
    if head[:1] in ("[", "("):
        m = PREFIX_RE.match(head)
    if m is None and "[" in head and not head.startswith(_UVICORN_LEVELS):
        m = PREFIX_RE.search(head)
    if m is None:
        if "sglang" in head[:160]:
            p = PYLOG_RE.match(head)
            if p is not None:
                return _classify_pylog(text, p, frame)
        return _classify_unprefixed(text, head, frame)
    msg = text[m.end() :]
    ranks = m.group("ranks").strip()
    tp = tp_of(ranks) if ranks else None
    date = m.group("date")
    ms = m.group("ms")
    ts_text = (date or "") + m.group("time") + ("." + ms if ms else "")
    rec = Rec(
        text=text,
        msg=msg,
        ranks=ranks,
        tp=tp,
        ts_text=ts_text,
        has_date=date is not None,
        has_ms=ms is not None,
        prefixed=True,
        frame=frame,
    )
    _classify_msg(rec, msg[:SCAN_LIMIT])
    return rec


# SGLang's loggers (``sglang.srt.…``) under another program's Python logging format, e.g.
# ``2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler: Decode batch, …`` or
# ``2026-06-07 10:59:31,659 - sglang.srt.managers.scheduler - INFO - …``: the record is SGLang's, the
# time the wrapper's.
PYLOG_RE = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3})\d*)?"
    r"[^\n]{0,40}?\bsglang(?:\.\w+)*(?:: | - (?:[A-Z]+ - )?)"
)


def _classify_pylog(text: str, m: re.Match[str], frame: bool) -> Rec:
    ms = m.group("ms")
    rec = Rec(
        text=text,
        msg=text[m.end() :],
        ts_text=m.group("date") + " " + m.group("time") + ("." + ms if ms else ""),
        has_date=True,
        has_ms=ms is not None,
        prefixed=True,
        frame=frame,
    )
    _classify_msg(rec, rec.msg[:SCAN_LIMIT])
    return rec


_TP_CACHE: dict[str, int | None] = {}


def tp_of(ranks: str) -> int | None:
    """TP rank in a prefix's stripped rank text (``"DP0 TP3"`` → 3), else None."""
    tp = _TP_CACHE.get(ranks, -1)
    if tp != -1:
        return tp
    tp = None
    i = ranks.find("TP")
    if i >= 0:
        j = i + 2
        while j < len(ranks) and ranks[j].isdigit():
            j += 1
        tp = int(ranks[i + 2 : j])
    if len(_TP_CACHE) < 4096:
        _TP_CACHE[ranks] = tp
    return tp


def _classify_msg(rec: Rec, msg: str) -> None:
    if msg[:1] in _UVICORN_FIRST and msg.startswith(_UVICORN_LEVELS):
        _uvicorn(rec, msg)
        return
    if msg.startswith("Decode batch"):
        rec.kind, rec.tag = DECODE, "decode"
        rec.data = parse_decode(msg) or {}
        if not rec.data:
            rec.kind, rec.tag = OTHER, ""
        return
    if msg.startswith("Prefill batch"):
        rec.kind, rec.tag = PREFILL, "prefill"
        rec.data = parse_prefill(msg) or {}
        if not rec.data:
            rec.kind, rec.tag = OTHER, ""
        return
    for sub, tag, kind in MSG_RULES:
        if sub in msg:
            rec.tag, rec.kind = tag, kind
            _phase_fields(rec, msg)
            return
    low = msg.lower()
    if low.startswith("capture ") and "graph" in low:
        if "failed" in low:
            _classify_tail(rec, msg)
        elif " begin" in low:
            rec.tag, rec.kind = "capture_begin", PHASE
            rec.data = {"draft": "draft" in low, "what": _capture_what(low)}
        elif " end" in low:
            rec.tag, rec.kind = "capture_end", PHASE
            rec.data = {"draft": "draft" in low, "what": _capture_what(low)}
        else:
            rec.tag, rec.kind = "capture_info", PHASE
        return
    _classify_tail(rec, msg)


def _capture_what(low: str) -> str:
    for word in ("prefill", "verify", "extend", "decode", "piecewise"):
        if word in low:
            return word
    return "decode"


def _phase_fields(rec: Rec, msg: str) -> None:
    tag = rec.tag
    if tag == "load_end":
        d: dict[str, Any] = {}
        t = _TYPE_RE.search(msg)
        if t:
            d["type"] = t.group(1)
        e = _ELAPSED_RE.search(msg)
        if e:
            d["elapsed"] = float(e.group(1) or e.group(2))
        rec.data = d
    elif tag == "server_args":
        rec.data = {"raw": msg[msg.find("server_args=") + len("server_args=") :]}


def _classify_tail(rec: Rec, msg: str) -> None:
    """Errors, warnings and the rest, shared by prefixed and foreign lines."""
    from eagletui.core.formats.sglang.failures import match_failure  # local: triage imports this module

    fm = match_failure(msg)
    if fm is not None:
        rec.kind, rec.tag = ERROR, "fail"
        rec.data = {"failure": fm}
        return
    if "Warning" in msg or "WARNING" in msg or "warning" in msg or "deprecated" in msg:
        rec.kind = WARNING
    elif "Traceback (most recent call last)" in msg:
        rec.kind, rec.tag = ERROR, "traceback_start"
    elif " error" in msg.lower() and "Error" in msg:
        rec.kind = ERROR


def _classify_unprefixed(text: str, head: str, frame: bool) -> Rec:
    rec = Rec(text=text, msg=text, frame=frame)
    stripped = head.lstrip()
    # tqdm bars (only rank 0 writes them, and without a prefix).
    if is_bar(head) and _BAR_COUNT_RE.search(head):
        rec.kind, rec.frame = PROGRESS, True
        c = _BAR_COUNT_RE.search(head)
        assert c is not None
        done, total = int(c.group(1)), int(c.group(2))
        if "Completed |" in head or any(w in head for w in _SHARD_WORDS):
            rec.tag = "bar_shards"
            rec.data = {"done": done, "total": total, "label": ""}
        else:
            rec.tag = "bar_capture"
            label = ""
            b = _BS_RE.search(head)
            if b:
                label = "bs=" + b.group(1)
            else:
                n = _NUM_TOKENS_RE.search(head)
                if n:
                    label = "num_tokens=" + n.group(1)
                else:
                    a = _AVAIL_RE.search(head)
                    if a:
                        label = "avail_mem=" + a.group(1)
            rec.data = {"done": done, "total": total, "label": label}
        return rec
    # uvicorn's own format, possibly behind a docker-compose "name  | " prefix.
    ui = -1
    for lvl in _UVICORN_LEVELS:
        ui = head.find(lvl)
        if ui >= 0:
            break
    if ui >= 0:
        rec.msg = text[ui:]
        _uvicorn(rec, head[ui:])
        return rec
    # Another program's prefix in front of a continuation line (docker compose, a log shipper,
    # journald, kubectl --prefix, a wrapper's logger): read what follows it.
    fp = FOREIGN_PREFIX_RE.match(head)
    if fp is not None and fp.end() < len(head):
        text = text[fp.end() :]
        head = head[fp.end() :]
        rec.msg = text
        stripped = head.lstrip()
    if stripped.startswith("Traceback (most recent call last)"):
        rec.kind, rec.tag = TRACEBACK, "traceback_start"
        return rec
    if stripped.startswith('File "') and '", line ' in stripped:
        rec.kind, rec.tag = TRACEBACK, "frame"
        return rec
    if _ARGPARSE_RE.match(stripped):
        rec.kind, rec.tag = ERROR, "fail"
        from eagletui.core.formats.sglang.failures import match_failure

        fm = match_failure(stripped) or ("bad_args", 88, "argparse")
        rec.data = {"failure": fm if fm[0] == "bad_args" else ("bad_args", 88, "argparse")}
        return rec
    if stripped.startswith("usage: "):
        rec.kind, rec.tag = ERROR, "usage"
        return rec
    if stripped[:1] in "KkSsAaBb[/" or ": line " in stripped[:80]:
        from eagletui.core.formats.sglang.failures import shell_death

        if shell_death(stripped):
            rec.kind, rec.tag = ERROR, "fail"
            rec.data = {"failure": ("died", 45, "process_killed")}
            return rec
    _classify_tail(rec, head)
    if rec.kind == OTHER and _EXC_LINE_RE.match(stripped):
        rec.tag = "exc_line"
    return rec


def _uvicorn(rec: Rec, body: str) -> None:
    """A uvicorn line (``INFO:     …`` etc.), bare or behind SGLang's ``[timestamp]`` (0.4.6+)."""
    if "HTTP/1." in body and '" ' in body:
        rec.kind, rec.tag = HTTP, "access"
        if "POST /generate" in body:
            rec.tag = "access_generate"
        return
    rec.kind = HTTP
    if "Uvicorn running on" in body:
        rec.tag = "http_up"
        rec.data = {"url": body.split("running on ", 1)[1].split(" ", 1)[0]}
    elif "Application startup complete" in body:
        rec.tag = "http_startup"
    elif "Shutting down" in body or "Finished server process" in body or "Application shutdown" in body:
        rec.tag = "http_shutdown"
    if body.startswith("ERROR"):
        rec.kind = ERROR
        _classify_tail(rec, body)
        rec.kind = ERROR
    elif body.startswith("WARNING"):
        rec.kind = WARNING


# Where in the startup a traceback frame is (innermost match wins): (needle, phase family). Function
# names and module paths of sglang's own startup code, stable across 0.4 – 0.5.23.
FRAME_PHASES: tuple[tuple[str, str], ...] = (
    ("in init_torch_distributed", "dist_init"),
    ("in initialize_model_parallel", "dist_init"),
    ("in init_distributed_environment", "dist_init"),
    ("in init_parallel", "dist_init"),
    ("in load_model", "load"),
    ("in load_weights", "load"),
    ("/model_loader/", "load"),
    ("in init_memory_pool", "kv_cache"),
    ("in profile_max_num_token", "kv_cache"),
    ("prefill_cuda_graph_runner.py", "capture_prefill"),
    ("piecewise_cuda_graph_runner.py", "capture_prefill"),
    ("cuda_graph_runner.py", "capture"),
    ("cuda_graph_setup.py", "capture"),
    ("in init_device_graphs", "capture"),
    ("in init_cuda_graphs", "capture"),
    ("in _execute_server_warmup", "warmup"),
    ("in _wait_and_warmup", "warmup"),
)
_DRAFT_FRAMES = ("eagle_worker", "EAGLEWorker", "draft_worker", "draft_model_runner", "/speculative/")


def frame_phase(line: str) -> tuple[str | None, bool]:
    """(phase family, is the draft's) a traceback frame line points to; (None, False) if nothing."""
    head = line[:1000]
    fam = None
    for needle, f in FRAME_PHASES:
        if needle in head:
            fam = f
            break
    return fam, any(d in head for d in _DRAFT_FRAMES)


# Failure messages that name the startup step they come from.
MESSAGE_PHASES: tuple[tuple[str, str], ...] = (
    ("Capture cuda graph failed", "capture"),
    ("Not enough memory. Please try to increase --mem-fraction-static", "kv_cache"),
    ("warmup error", "warmup"),
)


def message_phase(text: str) -> str | None:
    """The phase family a failure message names (see MESSAGE_PHASES), else None."""
    head = text[:2000]
    for needle, fam in MESSAGE_PHASES:
        if needle in head:
            return fam
    return None


def exception_line(text: str) -> bool:
    """True if ``text`` looks like the final ``SomeError: message`` line of a traceback."""
    return _EXC_LINE_RE.match(text[:SCAN_LIMIT].lstrip()) is not None


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


_DATE_CACHE: dict[str, int] = {}
# The minute of the last dated timestamp: (``"YYYY-MM-DD HH:MM"``, days × 86400.0, HH × 3600 + MM × 60).
_MINUTE: tuple[str | None, float, int] = (None, 0.0, 0)


def ts_seconds(ts_text: str) -> float | None:
    """Seconds for a prefix timestamp: days since 0001-01-01 × 86400 + time of day (+ ms).

    Time-only prefixes (0.3.x) give the time of day; callers handle the midnight wrap.
    """
    global _MINUTE
    key, day_s, hm = _MINUTE
    n = len(ts_text)
    if ts_text[:17] == key and (n == 19 or (n == 23 and ts_text[19] == ".")):
        # Same minute as last time: the same arithmetic as below, without re-reading date and hour.
        try:
            secs: float = hm + int(ts_text[17:19])
            if n == 23:
                secs += int(ts_text[20:23]) / 1000.0
        except ValueError:
            return None
        return day_s + secs
    try:
        if len(ts_text) >= 19 and ts_text[4] == "-":
            date = ts_text[:10]
            day = _DATE_CACHE.get(date)
            if day is None:
                import datetime as _dt

                day = _dt.date(int(date[:4]), int(date[5:7]), int(date[8:10])).toordinal()
                if len(_DATE_CACHE) < 4096:
                    _DATE_CACHE[date] = day
            t = ts_text[11:]
        elif len(ts_text) >= 14 and ts_text[2] == "-":  # MM-DD (no year): a leap year, so 02-29 exists
            date = ts_text[:5]
            day = _DATE_CACHE.get(date)
            if day is None:
                import datetime as _dt

                day = _dt.date(2000, int(date[:2]), int(date[3:5])).toordinal()
                if len(_DATE_CACHE) < 4096:
                    _DATE_CACHE[date] = day
            t = ts_text[6:]
        else:
            day = 0
            t = ts_text
        hm = int(t[0:2]) * 3600 + int(t[3:5]) * 60
        secs = float(hm + int(t[6:8]))
        if len(t) > 9 and t[8] == ".":
            secs += int(t[9:12]) / 1000.0
        if day and (n == 19 or n == 23):
            _MINUTE = (ts_text[:17], day * 86400.0, hm)
        return day * 86400.0 + secs
    except (ValueError, IndexError):
        return None
