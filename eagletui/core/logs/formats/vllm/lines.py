"""Pure classifier for single vLLM log lines (0.6 – 0.25), part of vLLM's LogFormat.

The record prefix (level, time, source location, the writer's actor), the messages that mark phases,
uvicorn's lines, tracebacks logged record by record, bars and the lines a shell prints when the
server dies. Stateless: :class:`eagletui.core.logs.formats.vllm._Reader` adds what needs the lines before.
"""

from __future__ import annotations

import re
from typing import Any

from eagletui.core.logs.formats import progress
from eagletui.core.logs.formats.vllm.failures import match_failure
from eagletui.core.logs.formats.vllm.serving import SPEC_HEADS, parse_spec, parse_stats
from eagletui.core.logs.seam import DECODE, ERROR, HTTP, PHASE, PROGRESS, SCAN_LIMIT, TRACEBACK, WARNING, Rec

# ------------------------------------------------------------------ record prefix

#: ``(Actor pid=N) `` / ``(VllmWorker rank=2 pid=N) `` / Ray's ``(Actor pid=N, ip=…) ``.
_ACTOR = r"\((?P<actor>[A-Za-z_][\w.-]{0,63})(?: rank=(?P<arank>\d{1,6}))? pid=\d{1,10}(?:, ip=[\d.:a-f]{1,64})?\) *"
ACTOR_RE = re.compile(_ACTOR)
#: The record start: level, ``MM-DD HH:MM:SS`` (milliseconds in some builds), ``[file.py:N]``.
PREFIX_RE = re.compile(
    r"(?:" + _ACTOR + r")?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) +"
    r"(?P<date>\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3})\d*)? "
    r"\[?(?P<file>[\w./-]{1,120}):(?P<lineno>\d{1,7})\] ?"
)
#: A record's start: one of vLLM's own processes as the writer (``(EngineCore_DP0 pid=…)``,
#: ``(Worker_TP0_EP0 pid=…)``, ``(VllmWorker rank=0 pid=…)``, ``(RayWorkerWrapper pid=…, ip=…)``; another
#: program's Ray actor in front of them is a wrapper's) or the level and date (where a wrapper's prefix ends).
RECORD_START_RE = re.compile(
    r"\((?:EngineCore|APIServer|ApiServer|VllmWorker|RayWorker|DPCoordinator|DPSupervisor|Worker(?=[_ ]))"
    r"[\w.-]{0,63}(?: rank=\d{1,6})? pid=\d{1,10}(?:, ip=[\d.:a-f]{1,64})?\)"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\d{2}-\d{2} \d{2}:\d{2}:\d{2}"
)
_RANK_ACTOR_RE = re.compile(r"(?:Worker|VllmWorker)\w*?(?:_TP(?P<tp>\d+))?")
_UVICORN_LEVELS = ("INFO:     ", "ERROR:    ", "WARNING:  ", "DEBUG:    ", "CRITICAL: ")
#: uvicorn's access line as vLLM 0.10 formats it (``INFO  127.0.0.1:53300 "POST …" 200 OK``)
_ACCESS_RE = re.compile(
    r'(?:INFO:?\s+)?[\w.:\[\]-]{3,64}(?: -)? "(?:GET|POST|PUT|DELETE|HEAD|OPTIONS) \S+ HTTP/'
)


def _rank_of_actor(actor: str, arank: str | None) -> tuple[bool, str, int | None]:
    """(is a rank, rank key, rank number) of a writer, before the reader knows of workers."""
    if actor.startswith("APIServer") or actor.startswith("api_server"):
        return False, "", None
    m = _RANK_ACTOR_RE.fullmatch(actor) or _RANK_ACTOR_RE.match(actor)
    if m is not None and actor.startswith(("Worker", "VllmWorker")):
        if arank is not None:
            return True, f"TP{arank}", int(arank)
        if m.group("tp") is not None:
            return True, f"TP{m.group('tp')}", int(m.group("tp"))
        return True, actor, None  # a worker without a number (V0's VllmWorkerProcess)
    return True, "", None  # the engine core (the only rank until workers show up), Ray's engine


# ------------------------------------------------------------------ messages

# (substring, tag, kind), first match wins; checked on prefixed messages only.
MSG_RULES: tuple[tuple[str, str, str], ...] = (
    ("non-default args: ", "server_args", PHASE),
    ("LLM engine (v", "engine_config", PHASE),
    ("vLLM API server version ", "version", PHASE),
    ("distributed_init_method=", "dist_begin", PHASE),
    (" is assigned as DP rank", "dist_end", PHASE),
    ("Starting to load model", "load_begin", PHASE),
    ("Loading drafter model", "load_begin", PHASE),
    ("Loading weights took", "load_end", PHASE),
    ("Loading model weights took", "load_end", PHASE),
    ("Model loading took", "load_commit", PHASE),
    ("for vLLM's torch.compile", "compile_begin", PHASE),
    ("torch.compile takes", "compile_end", PHASE),
    ("torch.compile took", "compile_end", PHASE),
    ("Dynamo bytecode transform time", "compile_info", PHASE),
    ("Compiling a graph for", "compile_info", PHASE),
    ("Initial profiling/warmup run took", "compile_info", PHASE),
    ("Profiling CUDA graph memory", "kv_alloc", PHASE),
    ("Available KV cache memory", "kv_alloc", PHASE),
    # V0 (≤ 0.10): the worker's profile of what is left for the KV cache (``worker/worker.py:274``), then
    # the executor's ``# %s blocks: %d, # CPU blocks: %d`` with the platform's device name (``cuda``,
    # ``rocm``; older releases print ``GPU``) (``executor/executor_base.py:114`` of 0.10.2)
    ("Memory profiling takes", "kv_alloc", PHASE),
    ("GPU KV cache size", "pool_end", PHASE),
    ("# GPU blocks:", "pool_end", PHASE),
    (", # CPU blocks:", "pool_end", PHASE),
    ("Maximum concurrency for", "kv_info", PHASE),
    ("Capturing the model for CUDA graphs", "capture_begin", PHASE),
    ("Graph capturing finished", "summary", PHASE),
    ("init engine (profile, create kv cache", "timings", PHASE),
    # launcher.py's serve_http, after the engine is up and the socket bound: uvicorn serves next
    ("Available routes are:", "ready", PHASE),
)
_URL_RE = re.compile(r"on (https?://\S+)")
#: ``Starting vLLM API server 0 on http://…`` (≤ 0.1x), ``Starting vLLM server on http://…`` (0.2x); the
#: name may be redacted (``Starting v<HOST> server on``). The socket is bound before the engine starts
#: and this is logged once the engine is up, right before uvicorn serves it.
_SERVER_ON_RE = re.compile(r"Starting v\S{0,16} (?:API )?server(?: \d+)? on (\S+)")
_SGR_RE = re.compile(r"\x1b\[[0-9;]{0,32}m")
_HTML_RE = re.compile(r"</?(?:font|b|i|span|strong|em)\b[^<>]{0,200}>")
_STATS_RE = re.compile(r"Avg prompt throughput: ")

# argparse's "prog: error: …" (``vllm serve: error: unrecognized arguments: --x``)
_ARGPARSE_RE = re.compile(
    r"^[\w./ -]{1,80}: error: (?:unrecognized arguments|the following arguments are required|argument |"
    r"ambiguous option|invalid choice|expected |one of the arguments)"
)


def _capture_bar(head: str) -> dict[str, Any] | None:
    """What graph a ``Capturing … CUDA graph…`` bar captures (None: not a capture bar)."""
    if "Capturing" not in head or "graph" not in head.lower():
        return None
    low = head[: head.find("%") if "%" in head else 200].lower()
    if "capturing prefill cuda graphs" in low or "draft" in low or "speculator" in low:
        return {"draft": True, "what": "decode"}
    if "piecewise" in low or "mixed" in low:
        return {"draft": False, "what": "prefill"}
    return {"draft": False, "what": "decode"}


# what a shell prints when the server it started dies (``Killed``, ``Segmentation fault (core dumped)``)
_SHELL_DEATH_RE = re.compile(
    r"(?:\[\d+\][+-]? +\d+ +|\S+: line \d+: +\d+ +)?(?:[Kk]illed|[Ss]egmentation fault|[Aa]borted)"
    r"(?: +\(core dumped\))?(?: {2,}\S.*| *$)"
)


# ------------------------------------------------------------------ classification


def classify(text: str, frame: bool = False) -> Rec:
    """One logical line → a record (stateless; :class:`_Reader` adds what needs the lines before)."""
    if "\x1b[" in text[:SCAN_LIMIT]:
        text = _SGR_RE.sub("", text)
    if "</" in text[:300]:
        # the coloured actor copied from a terminal as rich text: ``<font color=…><b>(APIServer pid=1)</b></font>``
        text = _HTML_RE.sub("", text[:300]) + text[300:]
    head = text if len(text) <= SCAN_LIMIT else text[:SCAN_LIMIT]
    m = PREFIX_RE.match(head)
    if m is None and ("INFO" in head or "ERROR" in head or "WARNING" in head or "DEBUG" in head):
        m = PREFIX_RE.search(head, 0, 400)
        if m is not None and "`" in head[: m.start()]:
            m = None  # quoted in prose
    if m is not None:
        return _prefixed(text, m, frame)
    a = ACTOR_RE.match(head) if head[:1] == "(" else None
    rec = Rec(text=text, msg=text, frame=frame)
    if a is not None:
        rec.rank_actor, rec.ranks, rec.tp = _rank_of_actor(a.group("actor"), a.group("arank"))
        rec.actor = a.group("actor")
        rec.prefix_end = a.end()
        rec.msg = text[a.end() :]
        if rec.tp is not None:
            rec.rank_span = (1, 1 + len(rec.actor))
    _unprefixed(rec, rec.msg[:SCAN_LIMIT])
    return rec


def _prefixed(text: str, m: re.Match[str], frame: bool) -> Rec:
    actor = m.group("actor") or ""
    is_rank, ranks, tp = _rank_of_actor(actor, m.group("arank")) if actor else (True, "", None)
    ms = m.group("ms")
    end = m.end()
    rec = Rec(
        text=text,
        msg=text[end:],
        ranks=ranks,
        tp=tp,
        ts_text=m.group("date") + " " + m.group("time") + ("." + ms if ms else ""),
        has_date=True,
        has_ms=ms is not None,
        prefixed=True,
        frame=frame,
        rank_actor=is_rank,
        prefix_end=end,
        rank_span=(m.start("actor"), m.end("actor")) if tp is not None else (0, 0),
        actor=actor,
    )
    msg = rec.msg[:SCAN_LIMIT]
    level = m.group("level")
    if level == "ERROR" or level == "CRITICAL":
        _error_record(rec, msg)
        return rec
    if uvicorn_message(msg):
        _uvicorn(rec, msg)
        return rec
    if _STATS_RE.search(msg[:80]):
        rec.kind, rec.tag = DECODE, "stats"
        rec.data = parse_stats(msg) or {}
        return rec
    if any(h in msg[:40] for h in SPEC_HEADS):
        spec = parse_spec(msg)
        if spec is not None:
            rec.kind, rec.tag, rec.data = DECODE, "spec", {"spec": spec}
            return rec
    for sub, tag, kind in MSG_RULES:
        if sub in msg:
            rec.tag, rec.kind = tag, kind
            _phase_fields(rec, msg)
            return rec
    if "Starting v" in msg and " on " in msg:
        u = _SERVER_ON_RE.search(msg)
        if u is not None:
            rec.kind, rec.tag = HTTP, "http_up"
            rec.data = {"url": u.group(1)}
            return rec
    fm = match_failure(msg)
    if fm is not None:
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
    elif level == "WARNING":
        rec.kind = WARNING
    return rec


def uvicorn_message(msg: str) -> bool:
    """A record's message is uvicorn's (its level word, or an access line): classify reads it as such."""
    return msg.startswith(_UVICORN_LEVELS) or _ACCESS_RE.match(msg) is not None


def _phase_fields(rec: Rec, msg: str) -> None:
    tag = rec.tag
    if tag == "server_args":
        rec.data = {"raw": msg[msg.find("non-default args: ") + len("non-default args: ") :]}
    elif tag == "engine_config":
        i = msg.find("with config: ")
        rec.data = {"raw": msg[i + len("with config: ") :] if i >= 0 else "", "engine": True}
    elif tag == "load_begin":
        rec.data = {"draft": "drafter" in msg}


#: A frame's source line in an ERROR record whose indentation the paste lost (``self.qkv_proj =
#: QKVParallelLinear(``, ``return func(*args, **kwargs)``, ``super().init(input_size=input_size,``): a
#: Python statement, which a log message never starts with (``Error in …``, ``RuntimeError: …``).
_CODE_LINE_RE = re.compile(r"(?:return |raise |await |yield )?[A-Za-z_][\w.]*(?:\(\))?(?:\[[^\]\n]{0,80}\])?(?: = |\.?\()")


def _error_record(rec: Rec, msg: str) -> None:
    """An ERROR record: a failure line, or a piece of a traceback that continues the one before."""
    stripped = msg.lstrip()
    if stripped.startswith("Traceback (most recent call last)"):
        rec.kind, rec.tag, rec.cont = ERROR, "traceback_start", True
        return
    fm = match_failure(msg)
    if stripped.startswith('File "') and '", line ' in stripped:
        rec.kind, rec.tag, rec.cont = TRACEBACK, "frame", True
        return
    if fm is None and _CODE_LINE_RE.match(stripped) is not None:
        rec.kind, rec.cont = TRACEBACK, True
        return
    if fm is not None:
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
        # the message of an exception inside the traceback, or the header line that starts one
        rec.cont = not stripped.startswith(
            ("EngineCore failed", "WorkerProc failed", "EngineCore encountered", "WorkerProc hit")
        )
        return
    rec.kind = ERROR
    if (
        msg[:1] in (" ", "^", "~")
        or not stripped
        or stripped.startswith(("The above exception", "During handling"))
    ):
        rec.kind, rec.cont = TRACEBACK, True
    elif _EXC_LINE_RE.match(stripped):
        rec.tag, rec.cont = "exc_line", True


_EXC_LINE_RE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed))(?:: |$)"
)


def _uvicorn(rec: Rec, body: str) -> None:
    if "HTTP/1." in body and '" ' in body:
        rec.kind, rec.tag = HTTP, "access"
        return
    rec.kind = HTTP
    if "Application startup complete" in body:
        rec.kind, rec.tag = PHASE, "ready"
    elif "Uvicorn running on" in body:
        rec.tag = "http_up"
        rec.data = {"url": body.split("running on ", 1)[1].split(" ", 1)[0]}
    elif "Shutting down" in body or "Finished server process" in body or "Application shutdown" in body:
        rec.tag = "http_shutdown"
    if body.startswith("ERROR"):
        fm = match_failure(body)
        rec.kind = ERROR
        if fm is not None:
            rec.tag, rec.data = "fail", {"failure": fm}
    elif body.startswith("WARNING"):
        rec.kind = WARNING


def _unprefixed(rec: Rec, head: str) -> None:
    """Lines without a record prefix (behind an actor or bare): bars, uvicorn, tracebacks, argparse."""
    stripped = head.lstrip()
    if progress.is_bar(head):
        count = progress.bar_count(head)
        if count is not None:
            rec.kind, rec.frame = PROGRESS, True
            done, total = count
            if "Completed |" in head or "checkpoint shards" in head:
                rec.tag, rec.data = "bar_shards", {"done": done, "total": total, "label": ""}
            else:
                cap = _capture_bar(head)
                if cap is not None:
                    label = (
                        "FULL" if "FULL" in head[:120] else "PIECEWISE" if "PIECEWISE" in head[:120] else ""
                    )
                    rec.tag = "bar_capture"
                    rec.data = {"done": done, "total": total, "label": label, **cap}
                    elapsed = progress.bar_elapsed(head)
                    if elapsed is not None:
                        rec.data["elapsed"] = elapsed
            return
    if stripped.startswith(_UVICORN_LEVELS) or _ACCESS_RE.match(stripped):
        _uvicorn(rec, stripped)
        return
    if stripped.startswith("Traceback (most recent call last)"):
        rec.kind, rec.tag = TRACEBACK, "traceback_start"
        return
    if stripped.startswith('File "') and '", line ' in stripped:
        rec.kind, rec.tag = TRACEBACK, "frame"
        return
    if _ARGPARSE_RE.match(stripped):
        found = match_failure(stripped)
        fm = found if found is not None and found[0] == "bad_args" else ("bad_args", 88, "argparse")
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
        return
    if stripped.startswith("usage: "):
        rec.kind, rec.tag = ERROR, "usage"
        return
    if _SHELL_DEATH_RE.fullmatch(stripped[:400].strip()):
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": ("died", 45, "process_killed")}
        return
    failure = match_failure(stripped)
    if failure is not None:
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": failure}
    elif "Warning" in stripped or "WARNING" in stripped or "deprecated" in stripped:
        rec.kind = WARNING
    elif _EXC_LINE_RE.match(stripped):
        rec.tag = "exc_line"
