"""Steady-state decode of one setting, and whether a side of a comparison decoded eagerly there.

A benchmark's aggregate tok/s (Σ tokens ÷ wall time) carries each request's TTFT and the ramp-up and
ramp-down of the batch: on a short run (the 0.7–3 s runs of shared/fixtures/sglang-0.5.17-h200-turn4,
run 2) that is a large share of the time, and a speculative server's slower prefill (its draft model
extends the prompt too) weighs in it as heavily as its decode. The **steady-state decode** is the decode
alone, per request, in tok/s:

* from the **server's decode lines** (SGLang's ``Decode batch … gen throughput (token/s)``, folded as
  ``DecodeStats``): the median of the lines logged during the run at ``#running-req`` equal to the
  concurrency, counting only **clean** lines — no prefill ran since the decode line before (a line's
  throughput is its tokens over the time since the last line, so a prefill in between lowers it), and
  at least :data:`MIN_CLEAN_LINES` of them; ÷ the concurrency. A speculative server logs once per
  ``decode-log-interval`` cycles, each making several tokens per request, so with short requests every
  line spans a prefill and none is clean: then
* from the **benchmark's ITL** (each chunk's gap spread over the tokens it carried, TTFT excluded):
  ``1000 ÷ mean ITL`` ms, the decode rate of one stream.

Both sides of a comparison must use the same source (a clean log on one side and an ITL on the other is
not like for like). Each benchmark gives one value, so repeats give a mean and a spread like tok/s does.

**Eager decoding**: a batch above the largest CUDA-graph batch size captured runs without a graph
(slower, and not what the settings are for). A side decoded eagerly at concurrency ``c`` when its log
said ``cuda graph: False`` at a running batch ``≤ c`` above its largest captured size, or when ``c``
itself is above that size (a batch of ``c`` cannot replay a graph). Such a point is never the headline
of the economics (:mod:`eagletui.core.runs.economics`).

Pure: reads runs.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from eagletui.core.runs.run import Group, Run

#: Clean decode lines a benchmark needs at its concurrency for the log to give its steady state.
MIN_CLEAN_LINES = 3

LOG = "the server's decode lines"
ITL = "the benchmark's ITL"


def log_rates(run: Run, g: Group) -> list[float]:
    """Per benchmark of ``g`` with enough clean decode lines at its concurrency: their median gen
    throughput ÷ the concurrency (per-request tok/s)."""
    if not run.prefill_lines:
        return []  # a log that does not report prefills cannot tell a clean line
    out = []
    for r in g.results:
        lines = [gen for running, gen, clean in run.decode_log.get(r.bench, ()) if clean and running == g.concurrency]
        if len(lines) >= MIN_CLEAN_LINES:
            out.append(statistics.median(lines) / g.concurrency)
    return out


def itl_rates(g: Group) -> list[float]:
    """Per benchmark of ``g`` that measured ITLs: 1000 ÷ the mean ITL in ms (one stream's decode tok/s)."""
    out = []
    for r in g.results:
        itl = r.stats.get("itl_ms") if isinstance(r.stats, dict) else None
        m = itl.get("mean") if isinstance(itl, dict) else None
        if isinstance(m, int | float) and not isinstance(m, bool) and math.isfinite(m) and m > 0:
            out.append(1000.0 / m)
    return out


@dataclass(frozen=True)
class Steady:
    """Both sides' steady-state decode at one setting, per request, from one source."""

    source: str
    spec: tuple[float, ...]
    nospec: tuple[float, ...]

    @property
    def speedup(self) -> float | None:
        if not self.spec or not self.nospec:
            return None
        b = statistics.fmean(self.nospec)
        return statistics.fmean(self.spec) / b if b > 0 else None

    def to_json(self) -> dict[str, Any]:
        def side(xs: tuple[float, ...]) -> dict[str, Any]:
            return {"mean": round(statistics.fmean(xs), 2), "n": len(xs)}

        sp = self.speedup
        return {
            "source": self.source,
            "spec_tok_s_per_request": side(self.spec),
            "nospec_tok_s_per_request": side(self.nospec),
            "speedup": None if sp is None else round(sp, 4),
        }


def steady(spec: Run, g: Group, nospec: Run, h: Group) -> Steady | None:
    """The steady-state decode of ``spec``'s setting ``g`` and ``nospec``'s same setting ``h``: the decode
    lines when both sides have them, else the ITL when both have it; None when neither is shared."""
    a, b = log_rates(spec, g), log_rates(nospec, h)
    if a and b:
        return Steady(LOG, tuple(a), tuple(b))
    a, b = itl_rates(g), itl_rates(h)
    if a and b:
        return Steady(ITL, tuple(a), tuple(b))
    return None


def largest_graph(run: Run) -> int | None:
    """The largest decode batch size the launch captured in a CUDA graph (its log's capture line, else
    its graph settings as logged, else its flags); None when unknown or the graphs are off."""
    if run.graph_config.get("disabled"):
        return None
    if run.graph_sizes:
        return max(run.graph_sizes)
    cfg = run.graph_config
    bs = cfg.get("bs")
    if isinstance(bs, list) and bs and all(isinstance(b, int) for b in bs):
        return max(bs)
    if isinstance(cfg.get("max_bs"), int):
        return int(cfg["max_bs"])
    args = run.args
    for flag in ("--cuda-graph-bs-decode", "--cuda-graph-bs"):
        v = args.get(flag)
        sizes = [int(x) for x in (v if isinstance(v, list) else [v]) if isinstance(x, int) and x > 0]
        if sizes:
            return max(sizes)
    for flag in ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs"):
        v = args.get(flag)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def eager_at(run: Run, concurrency: int) -> int | None:
    """The largest captured batch size when ``run`` decoded eagerly at ``concurrency`` (above it), else
    None. With the size unknown, the log's eager lines at a batch ``≤ concurrency`` say it: then the
    batch below the smallest eager one stands for the size."""
    largest = largest_graph(run)
    if largest is not None:
        seen = any(largest < r <= concurrency for r in run.eager_running)
        return largest if concurrency > largest or seen else None
    if run.graph_config.get("disabled"):
        return None
    below = sorted(r for r in run.eager_running if r <= concurrency)
    return below[0] - 1 if below else None
