"""vLLM's log format (0.6 – 0.25): the :class:`~eagletui.core.logs.seam.LogFormat` of ``vllm serve``.

Built from real vLLM output posted in public issues and repositories (``tests/fixtures/vllm``). What
differs from SGLang, and where the seam takes it:

* Records: ``LEVEL MM-DD HH:MM:SS [file.py:N] message`` (``file.py:N]`` without the bracket before
  0.8), since 0.10 behind the writer's actor ``(EngineCore_DP0 pid=1) ``. Actors decide ranks:
  ``Worker_TP3``/``VllmWorker rank=3`` are ranks; the API server never is; the engine core is the
  only rank of a TP=1 server and none beside its workers (a :class:`_Reader` notices which).
* Startup: the API server's ``non-default args`` (or, before it existed, the engine's ``Initializing
  … LLM engine (vX) with config:``), weight load per rank (target, then ``Loading drafter model``),
  ``torch.compile`` and the profiling run, KV cache sizing, CUDA-graph capture shown only as bars
  (``(mixed prefill-decode, PIECEWISE)`` and ``(decode, FULL)``: two phases that a bar starts),
  ``init engine … took``, then the API server's routes and uvicorn's ``Application startup complete``
  (ready; there is no warmup request).
* Serving: ``Engine 000: Avg prompt throughput …, Avg generation throughput …`` every interval and,
  with speculation, ``SpecDecoding metrics: …`` on the next line. The two are one sample: the reader
  holds the stats line until its metrics line comes. The metrics line changed wording three times
  (V0 ``Speculative metrics: Draft acceptance rate: 0.642, System efficiency …``; 0.8–0.10
  ``SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length …``; 0.11+ ``Mean
  acceptance length …, Avg Draft acceptance rate: 17.5%``) and is read as key/value pairs, so the
  next wording still parses.
* Failures: every traceback line is logged at ERROR level with the prefix (``ERROR … [core.py:718]
  File …``), so those records continue the traceback (``Rec.cont``); the root cause is the engine
  core's first exception, not ``Engine core initialization failed. See root cause above`` that the API
  server prints last.

The package: :mod:`.lines` (the record prefix and the classifier of single lines), :mod:`.serving` (the
stats and speculative-decoding metrics lines), :mod:`.failures` (the failure table, its hints and the
startup phase of a traceback frame), :mod:`.facts` (the launch facts of the args line); here the
reader that adds what needs the lines before (:class:`_Reader`) and the format object (``VLLM``).
"""

from __future__ import annotations

import operator
import re
from operator import itemgetter
from typing import Any

from eagletui.core.logs.formats import progress
from eagletui.core.logs.formats.vllm.facts import facts_from_args, launch_facts
from eagletui.core.logs.formats.vllm.failures import (
    HEADLINE_TAGS,
    NAMED_BY,
    OWN_TAGS,
    REPEAT_PRIORITY,
    TERMINAL_TAGS,
    frame_phase,
    hint_for,
    match_failure,
)
from eagletui.core.logs.formats.vllm.lines import PREFIX_RE, RECORD_START_RE, classify, uvicorn_message
from eagletui.core.logs.formats.vllm.serving import (
    MAX_RATE,
    SPEC_HEADS,
    parse_spec,
    parse_stats,
    spec_src,
    stats_src,
)
from eagletui.core.logs.seam import (
    DECODE,
    ERROR,
    SCAN_LIMIT,
    TRACEBACK,
    FastPath,
    LaunchFacts,
    LineReader,
    LogFormat,
    Rec,
    VersionGuess,
)

_VERSION_RE = re.compile(r"(?:version |LLM engine \(v)(\d+\.\d+(?:\.\d+)?(?:[.+\w-]*)?)")
_COMM_RE = re.compile(r"NCCL|HCCL|Gloo|(?<![\w])(?:nccl|gloo|hccl)(?![a-z_])")
_EVIDENCE_RE = re.compile(
    r"\s*File \"[^\"]*/vllm/[^\"]*\", line \d+|usage: vllm |vllm(?: serve)?: error: |\S*api_server\.py: error: "
)
#: The CUDA-graph bar's description (gpu_model_runner.py, 0.10 – 0.33): only vLLM words it so.
_CAPTURE_BAR_RE = re.compile(r"Capturing CUDA graphs \((?:decode|mixed prefill-decode|prefill), (?:FULL|PIECEWISE)\)")
#: vLLM's own process names in the ``(Name pid=N)`` prefix (utils/system_utils.py, multiproc_executor.py).
_OWN_ACTORS = ("EngineCore", "Worker", "VllmWorker", "APIServer", "ApiServer", "DPSupervisor")


# ------------------------------------------------------------------ the reader


class _Reader(LineReader):
    """Per-interpreter state: which writers are ranks, the launch's k, a stats line awaiting its
    speculative-decoding metrics (one interval's sample is the two lines together)."""

    __slots__ = ("workers", "spec", "steps", "pending", "args_seen", "tb_key", "named")

    def __init__(self, fmt: LogFormat) -> None:
        super().__init__(fmt)
        self.classify = self._classify
        self.workers = False  # a Worker_TPn actor was seen: the engine core is not a rank
        # whether the launch speculates (then its stats lines wait for their metrics line); None: not
        # known yet (a log that starts mid-run), and stats lines wait too
        self.spec: bool | None = None
        self.steps: int | None = None
        self.pending: dict[str, Any] | None = None
        self.args_seen = False
        self.tb_key: tuple[str, str] | None = None  # writer and source line of the traceback being logged
        self.named = False  # a line of NAMED_BY was read: the failure is named

    def _classify(self, text: str, frame: bool = False) -> Rec:
        rec = classify(text, frame)
        actor = rec.actor
        if actor:
            if actor.startswith(("Worker", "VllmWorker")):
                self.workers = True
            elif self.workers and rec.rank_actor:
                rec.rank_actor = False  # the engine core beside its workers
        if rec.prefixed:
            self._traceback(rec)
        tag = rec.tag
        if tag == "server_args" or tag == "engine_config":
            self._launch(rec)
        elif tag == "stats":
            self._stats(rec)
        elif tag == "spec":
            self._spec(rec)
        elif tag == "fail":
            self._named(rec)
        return rec

    def _named(self, rec: Rec) -> None:
        """``Process EngineCore:`` is the failure where no line before it named one, and a repeat of the
        named one after such a line (:data:`~eagletui.core.logs.formats.vllm.failures.NAMED_BY`)."""
        kind, _, tag = rec.data["failure"]
        if tag == "engine_core_raised":
            if self.named:
                rec.data = {"failure": (kind, REPEAT_PRIORITY, tag)}
        elif tag in NAMED_BY:
            self.named = True

    def _traceback(self, rec: Rec) -> None:
        """``logger.exception`` writes each traceback line as its own ERROR record with the same
        writer and source location: those records continue the traceback, whatever their text."""
        if rec.kind not in (ERROR, TRACEBACK):
            self.tb_key = None
            return
        m = PREFIX_RE.search(rec.text, 0, rec.prefix_end + 1)
        if m is None or m.group("level") not in ("ERROR", "CRITICAL"):
            self.tb_key = None
            return
        key = (rec.actor, m.group("file") + ":" + m.group("lineno"))
        if key == self.tb_key:
            rec.cont = True
            if rec.kind == ERROR and not rec.tag:
                rec.kind = TRACEBACK
        elif rec.tag in ("traceback_start", "fail"):
            self.tb_key = key

    def _launch(self, rec: Rec) -> None:
        engine = rec.tag == "engine_config"
        facts = launch_facts(rec.data.get("raw", ""))
        if engine and self.args_seen:
            # the engine repeats what the API server's args line said: only its version is new
            self.args_seen = False
            rec.tag = "version"
        else:
            rec.tag = "server_args"
            self.args_seen = not engine
            self.spec = facts.spec_algorithm is not None
            self.steps = facts.spec_steps
            self.pending = None
        if engine and self.steps is None:
            self.steps = facts.spec_steps
            self.spec = self.spec or facts.spec_algorithm is not None

    def _stats(self, rec: Rec) -> None:
        data, rec.tag = rec.data, "decode"
        if self.spec is False or not data:
            held, self.pending = self.pending, None
            rec.data = held if held and not data else data
            return
        # with speculation the interval's metrics line follows: hold this one (emit an unpaired one)
        rec.data = self.pending or {}
        self.pending = data

    def _spec(self, rec: Rec) -> None:
        self.spec = True
        spec = rec.data["spec"]
        if spec.get("accept_len") is None and self.steps and spec.get("drafted"):
            spec = parse_spec(rec.msg, self.steps) or spec
            rec.data["spec"] = spec
        held, self.pending = self.pending, None
        if held:
            rec.data["decode"] = {
                **held,
                "accept_len": spec["accept_len"],
                "accept_rate": spec["accept_rate"],
            }

    def flush(self) -> list[Rec]:
        held, self.pending = self.pending, None
        if not held:
            return []
        return [Rec(text="", msg="", kind=DECODE, tag="decode", data=held)]


# ------------------------------------------------------------------ the serving fast path

# ``eagletui parse``'s bulk scan (BulkPath._scan). One match: a run of uvicorn access lines (bare, or behind
# the writer's actor: a subset of what BulkPath._line skips, ``INFO:     `` at the start or two characters
# after the first ``)`` within 386 characters, then ``HTTP/1.``), then either the API server's stats line
# with its metrics line right after it, in the common wordings (group 1, the two lines; 2: gen throughput,
# 3: accept length, 4: accepted, 5: drafted tokens), or any other line (group 6), or the end. The record
# prefix is a strict subset of PREFIX_RE's (INFO, no actor or the API server's: never a rank), so
# classify reads both lines as stats and metrics records.
_PFX = r"(?:\(APIServer pid=\d{1,10}\) )?INFO \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})? \[[\w.-]{1,60}:\d{1,7}\] "
_SCAN_SRC = (
    r"(?:(?:INFO:     |[^)\n]{0,385}+\)[^\n]INFO:     )[^\n]*HTTP/1\.[^\n]*\n)*+"
    r"(?:(" + _PFX + r"(?:Engine \d{1,6}: )?" + stats_src(frozenset({"gen"})) + r"[ \t]*\n"
    + _PFX + spec_src(frozenset({"mean", "accepted", "drafted"})) + r"[ \t]*)\n|(.*)\n|\Z)"
)
_SCAN = re.compile(_SCAN_SRC)
_SCAN_B = re.compile(_SCAN_SRC.encode())
_GEN, _ACC, _ACCEPTED, _DRAFTED = (itemgetter(i) for i in (1, 2, 3, 4))


class VLLMFastPath(FastPath):
    """vLLM's serving fast path for ``eagletui parse``: access lines and stats/metrics pairs in bulk, any
    other stats or metrics line read here with the reader's pairing, as classify and the reader would."""

    prefix_close = ")"
    prefix_window = 386
    prefix_gap = 2
    access_prefix = "INFO:     "
    access_marker = "HTTP/1."
    access_tail = '" '
    reads_serving = True
    scan_ix = (2, 1, 5)

    def scan_re(self, sample: str, binary: bool = False) -> Any:
        return _SCAN_B if binary else _SCAN

    def scan_ok(self, reader: LineReader) -> bool:
        # a stats line held for its metrics line: the next pair must not pass over it
        return isinstance(reader, _Reader) and reader.pending is None

    def scan_spec(
        self, found: list[tuple[Any, ...]], binary: bool, reader: LineReader
    ) -> tuple[int, list[float], int, int, dict[str, Any]] | None:
        """The run's pairs as the reader would fold them, where every value is one the full path keeps as
        printed: throughput in (0, MAX_RATE], accept length in [1, 65], accepted ≤ drafted. Else None."""
        if not isinstance(reader, _Reader) or reader.spec is False:
            return None  # a launch said no speculation: its stats lines are samples of their own
        pairs = [g for g in found if g[0]]
        gen = [float(x) for x in map(_GEN, pairs)]
        acc = [float(x) for x in map(_ACC, pairs)]
        accepted = [int(x) for x in map(_ACCEPTED, pairs)]
        drafted = [int(x) for x in map(_DRAFTED, pairs)]
        if not pairs or min(gen) <= 0 or max(gen) > MAX_RATE or min(acc) < 1.0 or max(acc) > 65.0:
            return None
        if not all(map(operator.le, accepted, drafted)):
            return None
        last = pairs[-1][0]
        spec = self._spec_of(last.decode("utf-8", "replace") if binary else last)
        if spec is None:
            return None
        reader.spec, reader.tb_key = True, None
        return len(pairs), acc, sum(accepted), sum(drafted), spec

    @staticmethod
    def _spec_of(pair: str) -> dict[str, Any] | None:
        line = pair[pair.find("\n") + 1 :]
        m = PREFIX_RE.match(line)
        return parse_spec(line[m.end() :]) if m is not None else None

    def parse_decode(self, msg: str) -> dict[str, Any] | None:
        """A scanned pair (the stats line and its metrics line): the DecodeStats the reader pairs."""
        stats_line, _, spec_line = msg.partition("\n")
        m, n = PREFIX_RE.match(stats_line), PREFIX_RE.match(spec_line)
        if m is None or n is None:
            return None
        stats = parse_stats(stats_line[m.end() :])
        spec = parse_spec(spec_line[n.end() :])
        if not stats or spec is None:
            return None
        return {**stats, "accept_len": spec["accept_len"], "accept_rate": spec["accept_rate"]}

    def serving_record(
        self, line: str, reader: LineReader
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None] | None:
        """An INFO stats or metrics record of the API server (or a writer without an actor): its sample.
        Anything classify would read otherwise (colours, HTML, a bar, an over-long line, a rank's
        writer, a metrics line it cannot parse) goes the full way."""
        if not isinstance(reader, _Reader) or len(line) > SCAN_LIMIT or "\x1b" in line or "</" in line[:300]:
            return None
        m = PREFIX_RE.match(line)
        if m is None or m.group("level") != "INFO" or m.group("actor") not in (None, "APIServer"):
            return None
        msg = line[m.end() :]
        if uvicorn_message(msg) or progress.is_bar(line):
            return None
        if "Avg prompt throughput: " in msg[:80]:
            rec = Rec(text=line, msg=msg, kind=DECODE, tag="stats", data=parse_stats(msg) or {})
            reader.tb_key = None
            reader._stats(rec)
            return (rec.data or None), None
        if any(h in msg[:40] for h in SPEC_HEADS):
            spec = parse_spec(msg)
            if spec is None:
                return None
            rec = Rec(text=line, msg=msg, kind=DECODE, tag="spec", data={"spec": spec})
            reader.tb_key = None
            reader._spec(rec)
            return rec.data.get("decode") or None, rec.data["spec"]
        return None


# ------------------------------------------------------------------ the format


class VLLMFormat(LogFormat):
    """vLLM's log format (see the module docstring)."""

    name = "vllm"
    label = "vLLM"
    terminal_tags = TERMINAL_TAGS
    own_tags = OWN_TAGS
    headline_tags = HEADLINE_TAGS
    draft_types = ("Eagle", "EAGLE", "MTP", "DFlash", "Medusa", "Draft")
    summary_keys = (
        "model",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "speculative_config",
        "gpu_memory_utilization",
        "max_num_seqs",
        "max_model_len",
        "max_num_batched_tokens",
    )
    bar_marks = progress.BAR_MARKS
    record_start = RECORD_START_RE
    fast = VLLMFastPath()
    #: the API server starts after the engine is warm: no warmup phase between "up" and "ready"
    http_warmup = False

    classifies_failures = True
    classify = staticmethod(classify)
    match_failure = staticmethod(match_failure)

    def parse_server_args(self, raw: Any) -> LaunchFacts:
        return launch_facts(raw)

    def facts_from_args(self, args: dict[str, Any]) -> LaunchFacts:
        return facts_from_args(args)

    def reader(self) -> LineReader:
        return _Reader(self)

    is_bar = staticmethod(progress.is_bar)

    def split_glued(self, segment: str) -> list[str]:
        return progress.split_glued(segment, PREFIX_RE)

    def ts_seconds(self, ts_text: str) -> float | None:
        """``MM-DD HH:MM:SS[.mmm]`` (vLLM prints no year): days in a leap year + time of day."""
        try:
            month, day = int(ts_text[0:2]), int(ts_text[3:5])
            h, mi, s = int(ts_text[6:8]), int(ts_text[9:11]), int(ts_text[12:14])
            if not (1 <= month <= 12 and 1 <= day <= 31 and h < 24 and mi < 60 and s < 62):
                return None
            import datetime as _dt

            days = _dt.date(2000, month, day).toordinal()
        except (ValueError, IndexError):
            return None
        secs = days * 86400.0 + h * 3600 + mi * 60 + s
        if len(ts_text) >= 18 and ts_text[14] == ".":
            secs += int(ts_text[15:18]) / 1000.0
        return secs

    frame_phase = staticmethod(frame_phase)
    hint_for = staticmethod(hint_for)

    def message_phase(self, text: str) -> str | None:
        head = text[:2000]
        if "warming up sampler" in head:
            return "kv_cache"
        if "GPU memory utilization" in head:
            return "dist_init"
        return None

    def evidence(self, msg: str) -> bool:
        head = msg[:400]
        if "Capturing CUDA graphs (" in head:
            return _CAPTURE_BAR_RE.search(head) is not None
        return "vllm" in head and _EVIDENCE_RE.match(head) is not None

    def own_actor(self, actor: str) -> bool:
        return actor.startswith(_OWN_ACTORS)

    def comm_backend_mention(self, msg: str) -> bool:
        if msg.startswith("    ") or msg.lstrip().startswith('File "'):
            return False
        return _COMM_RE.search(msg[:1000]) is not None

    def version_marks(self, msg: str, ver: VersionGuess) -> None:
        if "version " in msg or "LLM engine (v" in msg:
            m = _VERSION_RE.search(msg[:300])
            if m is not None:
                ver.exact = m.group(1)


VLLM = VLLMFormat()

__all__ = ["VLLM", "VLLMFormat"]
