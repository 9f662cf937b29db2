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

from eagletui.core.logs.formats.progress import BAR_COUNT_RE as _BAR_COUNT_RE
from eagletui.core.logs.formats.progress import BAR_MARKS, is_bar
from eagletui.core.logs.formats.progress import split_glued as _split_bar
from eagletui.core.logs.formats.sglang.failures import match_failure
from eagletui.core.logs.formats.sglang.prefix import PREFIX_RE, tp_of, ts_seconds
from eagletui.core.logs.formats.sglang.serving import parse_decode, parse_prefill
from eagletui.core.logs.seam import (
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

__all__ = [
    "BAR_MARKS",
    "classify",
    "split_glued",
    "is_bar",
    "tp_of",
    "ts_seconds",
    "parse_decode",
    "parse_prefill",
]

_BS_RE = re.compile(r"\bbs=(\d+)")
_NUM_TOKENS_RE = re.compile(r"num_tokens=(\d+)")
_AVAIL_RE = re.compile(r"avail_mem=([\d.]+ ?GB)")
_ELAPSED_RE = re.compile(r"elapsed=([\d.]+) ?s|Time elapsed: ([\d.]+) ?s")
_TYPE_RE = re.compile(r"type=(\w+)")

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
# (``[pod/name/container] ``), Ray's log forwarding (``(WorkerDict pid=4242) ``) and a wrapper's own logging (``INFO sglang: ``, ``INFO:root:``). SGLang's
# own record start is found by PREFIX_RE.search; this is only for lines that have none (tracebacks,
# argparse output, warnings) so that what follows the foreign prefix is read as if it stood alone.
FOREIGN_PREFIX_RE = re.compile(
    r"(?:"
    r"[\w.-]{1,64} *\| ?"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?:? +(?:(?:stdout|stderr) [FP] )?"
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [\w.-]+ [\w.@/-]+(?:\[\d+\])?: "
    r"|[\w.-]{1,64} [\w.@/-]{1,64}\[\d+\]: "
    r"|\[pod/[^\]\s]{1,200}\] "
    r"|\(\w{1,64} pid=\d+(?:, ip=[\d.]+)?\) "
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?::[\w.]{1,64}:| [\w.]{1,64}: )"
    r")+"
)
_SHARD_WORDS = (
    "checkpoint shards",
    "loading shards",
    "Loading safetensors",
    "Loading pt ",
    "Loading np_cache",
)
_CAPTURE_BAR_WORDS = ("Capturing batches", "Capturing prefill shape", "Capturing num tokens", "Capturing ")


def _capture_bar(head: str) -> bool:
    """A CUDA-graph capture bar by its description, or a frame without one (tqdm's first frames)."""
    if any(w in head for w in _CAPTURE_BAR_WORDS):
        return True
    desc = head.split("%", 1)[0].split(":", 1)[0]
    return not any(c.isalpha() for c in desc)


def split_glued(segment: str) -> list[str]:
    """Cut what other processes wrote after an unterminated bar frame off it.

    Eight processes share one stderr file; a tqdm frame without its newline gets the next writer's
    whole line glued behind it: another rank's log record, a Python warning, a traceback line. A frame
    ends with its ``[elapsed<remaining, rate]`` tail or, failing that, where SGLang's next record
    starts (:func:`eagletui.core.logs.formats.progress.split_glued`).
    """
    return _split_bar(segment, PREFIX_RE)


# Colour (SGR) sequences a wrapper, a coloured logging formatter or docker compose wrap around lines.
_SGR_RE = re.compile(r"\x1b\[[0-9;]{0,32}m")


def classify(text: str, frame: bool = False) -> Rec:
    """Classify one logical line (no ``\\r``/``\\n`` inside). Colour codes are dropped first."""
    if "\x1b[" in text[:SCAN_LIMIT]:
        text = _SGR_RE.sub("", text)
    head = text if len(text) <= SCAN_LIMIT else text[:SCAN_LIMIT]
    m = None
    if head[:1] in ("[", "("):
        m = PREFIX_RE.match(head)
    if m is None and "[" in head and not head.startswith(_UVICORN_LEVELS):
        m = PREFIX_RE.search(head)
        if m is not None and "`" in head[: m.start()]:
            m = None  # a record quoted in prose (markdown inline code), not one the server wrote
    if m is None:
        if "sglang" in head[:400]:
            p = PYLOG_RE.search(head, 0, 400)
            if p is not None:
                return _classify_pylog(text, p, frame)
        if ": " in head[:200]:
            s = STRUCTURED_RE.match(head)
            if s is not None:
                rec = _classify_pylog(text, s, frame)
                if rec.kind != OTHER or rec.tag or match_failure(rec.msg[:SCAN_LIMIT]) is not None:
                    # untimed: whether the logger's time is still in front depends on whether the file's
                    # outer prefix took it, and a reading must not depend on another wrapper around it
                    rec.ts_text, rec.has_date, rec.has_ms = "", False, False
                    return rec
        return _classify_unprefixed(text, head, frame)
    end = m.end()
    msg = text[end:]
    raw_ranks = m.group("ranks")
    ranks = raw_ranks.strip()
    if ranks:
        tp = tp_of(ranks)
        r0, r1 = m.span("ranks")
        span = (r0 + 1, r1)  # the label without its leading space: "TP3", "DP0 TP3"
    else:
        tp, span = None, (0, 0)
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
        prefix_end=end,
        rank_span=span,
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

#: A structured logger that replaced SGLang's own ``[time TPn]`` with its time, level and the logger's
#: location (NVIDIA Dynamo: ``2025-11-05T01:56:54.281615Z  INFO model_runner.init_device_graphs: Capture
#: cuda graph end. …``); the time and level may already be cut off as the file's outer prefix
#: (eagletui.core.logs.outer_prefix), leaving ``model_runner.init_device_graphs: …``. Only a message SGLang
#: writes makes such a line a record (classify): the shape alone is anyone's. The location ends in a
#: function's name (lower case or ``__init__``), which an exception's ``torch.distributed.DistBackendError:``
#: does not.
STRUCTURED_RE = re.compile(
    r"(?:(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3})\d*)?Z? +"
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) +)?"
    r"[A-Za-z_]\w{0,63}(?:\.\w{1,64}){0,3}\.(?:[a-z_]\w{0,63}): "
)


def _classify_pylog(text: str, m: re.Match[str], frame: bool) -> Rec:
    ms = m.group("ms")
    date = m.group("date")
    rec = Rec(
        text=text,
        msg=text[m.end() :],
        ts_text=date + " " + m.group("time") + ("." + ms if ms else "") if date else "",
        has_date=date is not None,
        has_ms=ms is not None,
        prefixed=True,
        frame=frame,
        prefix_end=m.end(),
    )
    _classify_msg(rec, rec.msg[:SCAN_LIMIT])
    return rec


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


# ``Engine startup timings (s): load_weight=0.20, kv_cache_allocation=1.54, scheduler_e2e=44.05,
# cuda_graph={prefill=30.11, decode=0.00, target_verify=2.81, draft_prefill=1.17, draft_decode=4.18,
# draft_extend=1.08}, tokenizer_e2e=49.27``: SGLang's own measures (entrypoints/engine.py
# _set_startup_time, printed from 0.5.17 on, the same wording through 0.5.23; each the maximum over the
# scheduler ranks, observability/startup_time.py).
_TIMING_RE = re.compile(r"(\w+)=([\d.]+)")
_GRAPHS_RE = re.compile(r"cuda_graph=\{([^}]{0,2000})\}")
#: The phase each of SGLang's cuda_graph timings belongs to (model_executor/graph_memory_usage.py keys).
_GRAPH_PHASE = {
    "prefill": "capture_prefill",
    "decode": "capture_target",
    "target_verify": "capture_target",
    "draft_prefill": "capture_draft",
    "draft_decode": "capture_draft",
    "draft_extend": "capture_draft",
}


def parse_startup_timings(msg: str) -> dict[str, Any]:
    """The timings line's values, and the phase durations they give (``phase_seconds``): the KV pool's
    allocation (whose only log line is printed when it ends) and each capture phase's graphs summed.
    ``load_weight`` covers target and draft together, so it names no single phase."""
    head = msg[:SCAN_LIMIT]
    graphs: dict[str, float] = {}
    g = _GRAPHS_RE.search(head)
    if g:
        for k, v in _TIMING_RE.findall(g.group(1)):
            try:
                graphs[k] = float(v)
            except ValueError:
                continue
        head = head[: g.start()] + head[g.end() :]
    values: dict[str, float] = {}
    for k, v in _TIMING_RE.findall(head):
        try:
            values[k] = float(v)
        except ValueError:
            continue
    phases: dict[str, float] = {}
    if "kv_cache_allocation" in values:
        phases["kv_cache"] = values["kv_cache_allocation"]
    for k, v in graphs.items():
        phase = _GRAPH_PHASE.get(k)
        if phase is not None:
            phases[phase] = round(phases.get(phase, 0.0) + v, 3)
    out: dict[str, Any] = {"timings": {**values, "cuda_graph": graphs}, "phase_seconds": phases}
    return out


def _phase_fields(rec: Rec, msg: str) -> None:
    tag = rec.tag
    if tag == "timings":
        rec.data = parse_startup_timings(msg)
    elif tag == "load_end":
        d: dict[str, Any] = {}
        t = _TYPE_RE.search(msg)
        if t:
            d["type"] = t.group(1)
        e = _ELAPSED_RE.search(msg)
        if e:
            d["elapsed"] = float(e.group(1) or e.group(2))
        rec.data = d
    elif tag == "server_args":
        # the whole record, not the scan window: a 0.5.23 args dict runs to ~17k characters, and the
        # fields after the first 8k (tp_size among them, in some orders) are facts too
        full = rec.msg[:500_000]
        rec.data = {"raw": full[full.find("server_args=") + len("server_args=") :]}


def _classify_tail(rec: Rec, msg: str) -> None:
    """Errors, warnings and the rest, shared by prefixed and foreign lines."""
    from eagletui.core.logs.formats.sglang.failures import match_failure  # local: triage imports this module

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
        elif not _capture_bar(head):
            pass  # another program's bar (the HF hub's "Fetching 4 files"): shown, not a phase
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
    if ui > 0 and FOREIGN_PREFIX_RE.fullmatch(head, 0, ui) is None:
        ui = -1  # a level word inside other text (``[sgl_kernel] CRITICAL: …``), not uvicorn's column
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
        from eagletui.core.logs.formats.sglang.failures import match_failure

        fm = match_failure(stripped) or ("bad_args", 88, "argparse")
        rec.data = {"failure": fm if fm[0] == "bad_args" else ("bad_args", 88, "argparse")}
        return rec
    if stripped.startswith("usage: "):
        rec.kind, rec.tag = ERROR, "usage"
        return rec
    if stripped[:1] in "KkSsAaBb[/" or ": line " in stripped[:80]:
        from eagletui.core.logs.formats.sglang.failures import shell_death

        if shell_death(stripped):
            rec.kind, rec.tag = ERROR, "fail"
            rec.data = {"failure": ("died", 45, "process_killed")}
            return rec
    _classify_tail(rec, head)
    if rec.kind == OTHER and _EXC_LINE_RE.match(stripped):
        rec.tag = "exc_line"
    return rec


_SERVED_RE = re.compile(r'"POST /v1/(?:chat/completions|completions|embeddings|responses) HTTP/1\.[01]" 2\d\d')


def _uvicorn(rec: Rec, body: str) -> None:
    """A uvicorn line (``INFO:     …`` etc.), bare or behind SGLang's ``[timestamp]`` (0.4.6+)."""
    if "HTTP/1." in body and '" ' in body:
        rec.kind, rec.tag = HTTP, "access"
        if "POST /generate" in body:
            rec.tag = "access_generate"
        elif _SERVED_RE.search(body) is not None:
            # an OpenAI-API request answered: SGLang's own warmup never uses these endpoints (it asks
            # /get_model_info and /generate or /encode), so the server is serving a client
            rec.data = {"serving": True}
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
    # the scheduler building the draft worker (0.5.4 launch_draft_worker, 0.5.10+ maybe_init_draft_worker):
    # its frames are the draft's (_DRAFT_FRAMES), so the phase is load_draft unless a deeper frame says more
    ("in maybe_init_draft_worker", "load"),
    ("in launch_draft_worker", "load"),
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
# speculative_hook: the draft's config is read while the server args are checked (0.5.17+,
# arg_groups/speculative_hook.py handle_speculative_decoding), before any server_args line.
_DRAFT_FRAMES = (
    "eagle_worker",
    "EAGLEWorker",
    "draft_worker",
    "draft_model_runner",
    "/speculative/",
    "speculative_hook",
)


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
    ("for prefill runner", "capture_prefill"),
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
