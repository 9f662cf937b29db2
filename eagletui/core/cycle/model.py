"""A cycle-time model of speculative decoding: what one draft+verify cycle costs, what it yields, and so
what tok/s a speculative setting would give.

One request stream decoding with EAGLE/EAGLE-3 repeats a **cycle**: ``steps`` draft forwards, one
target **verify** over the draft tokens, and the bookkeeping that grows with what the verify accepted
(the draft model's extend over the accepted tokens, KV and sampling commits). So, in ms::

    cycle(settings, a) = steps × draft_step_ms + verify_ms + fixed_ms + a × per_token_ms

and the cycle yields ``a`` tokens (its accept length: accepted draft tokens + the target's own), so one
stream makes ``a / cycle`` tokens per ms. SGLang's ``scripts/playground/bench_speculative.py`` computes
speed the same way: ``speed = accept_length / step_time``, with the step time read from the server's own
record (``SGLANG_RECORD_STEP_TIME=1``: ``/get_server_info`` → ``step_time_dict[batch size]``, seconds
per decode iteration, its 20th percentile). Plain decoding makes one token per step, ``1 / step_ms``.

**Acceptance per draft position.** What ``a`` is at other settings follows from how often each draft
position is accepted. ``rates[j-1]`` is the chance that draft token ``j`` is accepted given the ones
before it were; a verify with ``depth = min(steps, draft_tokens − 1)`` positions then accepts on average

    a = 1 + Σ_{j=1..depth} Π_{i≤j} rates[i-1]

Measured rates come from SGLang's ``spec_correct_drafts_histogram`` (how many verifies accepted 0, 1, 2
… draft tokens, :func:`rates_from_histogram`); without it, from the mean accept length alone, every
position gets the same rate (:func:`rates_from_mean`). Positions deeper than measured reuse the last
measured rate. With ``--speculative-eagle-topk`` 1 the drafts are a chain and SGLang makes
``draft_tokens = steps + 1``; wider trees (topk > 1) are predicted with the same per-level rates, which
is an approximation (a wider level is accepted more often).

**Where the parts come from** (:class:`CycleParts.source`): a step profile that splits the cycle, or a
fit (:func:`fit_parts`) from what one spec run and its no-spec reference measured:

* ``verify_ms`` ≈ one no-spec decode step at the same batch size: a verify is one target forward over
  a few tokens per request, which costs about what a one-token forward costs while decoding is bound by
  reading the weights (an estimate; the step profiler measures it);
* ``per_token_ms`` from two spec runs that differ only in the draft model (their cycles differ by what
  their extra accepted tokens cost), else 0 (a cycle held fixed in ``a``: said so);
* ``draft_step_ms`` = what is left of the measured cycle, per draft step.

A step profile with kernel times (:func:`_split`) gives ``draft_step_ms`` from the draft's kernels and
puts what no setting changes (the CPU-side time around SGLang's CUDA-graph replays) in ``fixed_ms``.

This module is the seam for predicting neighbouring settings from one run (issue 25): :func:`predict`
takes a :class:`Measurement` and :class:`SpecSettings` and returns a :class:`Prediction`. Pure arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

#: Positions of a tree that can be predicted at all (SGLang's own limit on draft tokens is far below).
MAX_DEPTH = 32


@dataclass(frozen=True)
class SpecSettings:
    """``--speculative-num-steps``, ``-eagle-topk`` and ``-num-draft-tokens`` (None: as SGLang derives)."""

    steps: int
    topk: int = 1
    draft_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.topk < 1:
            raise ValueError(f"steps and topk must be ≥ 1 (got {self.steps}, {self.topk})")

    @property
    def tokens(self) -> int:
        """Draft tokens per verify: ``steps + 1`` for a chain (topk 1), as SGLang adjusts it."""
        if self.topk == 1 or self.draft_tokens is None:
            return self.steps + 1
        return max(2, self.draft_tokens)

    @property
    def draft_forwards(self) -> int:
        """Forwards of the draft model in one cycle's drafting: ``steps − 1`` (SGLang's ``draft_forward``
        takes the first draft token from the previous draft extend and breaks before the last step's
        forward; steps 1 runs none, and its launch captures no draft graph at all)."""
        return self.steps - 1

    @property
    def depth(self) -> int:
        """Draft positions a verify can accept (the bonus token is not one)."""
        return max(1, min(self.steps, self.tokens - 1, MAX_DEPTH))

    @property
    def max_accept(self) -> int:
        """The most tokens one verify can accept: one per position plus the target's own."""
        return self.depth + 1

    def label(self) -> str:
        return f"steps {self.steps}, topk {self.topk}, {self.tokens} draft tokens"

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> SpecSettings | None:
        """From a launch's server flags; None when the step count is not set (SGLang chooses it)."""
        from eagletui.core.servers.spec import settings

        steps, topk, ndt = settings(args)
        if steps is None:
            return None
        return cls(steps=steps, topk=topk or 1, draft_tokens=ndt)


#: Below this share of a profiled cycle filled by kernels the cycle is bound by the CPU: the GPU waits on
#: the scheduler most of it. The lent H200's tiny EAGLE-3 server filled 16-24 %, and there a step change
#: moved the scheduler's CPU work in ways no profile shows: pinned, its own decode lines put steps 2's
#: cycle (3.52 ms) below steps 1's (3.92) and steps 3's (4.97) (docs/real-sglang.md, 2026-12-03). A big
#: model's decode fills 99 % (the 2×H200 trace). ``eagletui trace`` and the cycle model judge by it alike.
CPU_BOUND_SHARE = 0.5


def kernel_share(kernel_ms: float, span_ms: float) -> float | None:
    """The share of a cycle its kernels fill: kernel ms ÷ the cycle's span (its first part's start to its
    last part's end, the gaps between parts included); None without a span. The one definition that
    ``eagletui trace`` prints and the cycle model reads (:data:`CPU_BOUND_SHARE`)."""
    if not (finite(kernel_ms) and finite(span_ms)) or span_ms <= 0 or kernel_ms < 0:
        return None
    return kernel_ms / span_ms


def cpu_bound(share: float | None) -> bool:
    """A cycle whose kernels fill less than :data:`CPU_BOUND_SHARE` of it waits on the CPU."""
    return share is not None and share < CPU_BOUND_SHARE


def gpu_bound(share: float | None) -> bool:
    """A cycle whose kernels fill at least :data:`CPU_BOUND_SHARE` of it: the GPU bounds it (False where
    no share is known, as :func:`cpu_bound` is then False too)."""
    return share is not None and not cpu_bound(share)


@dataclass(frozen=True)
class CycleParts:
    """The parts of one cycle at one batch size, ms, and where they come from. ``fixed_ms`` is work of
    the cycle that neither the step count nor the accepted tokens change (a step profile's CPU-side time
    around a CUDA-graph replay, the scheduler between the parts); a fit leaves it 0.

    With ``per_forward`` (what a real SGLang server does, read from a step profile's graph replays) the
    draft costs ``draft_step_ms`` per draft-model *forward* (``steps − 1`` of them) plus
    ``draft_fixed_ms`` of the draft runner's own work whenever it runs at all (its buffer copies and
    attention metadata: steps 1 skips them); without, ``draft_step_ms`` per step. ``token_ms`` is what a
    verify costs per draft token beyond the ``measured_tokens`` it was measured with."""

    draft_step_ms: float
    verify_ms: float
    per_token_ms: float = 0.0
    source: str = ""
    fixed_ms: float = 0.0
    draft_fixed_ms: float = 0.0
    per_forward: bool = False
    token_ms: float = 0.0
    measured_tokens: int = 0
    #: other parts the evidence leaves open (a draft runner's share, a rest that may be fixed or per
    #: accepted token): a prediction's band is what they give
    alternatives: tuple[CycleParts, ...] = field(default=(), compare=False)
    #: what a no-spec decode step would cost, estimated from the cycle where no no-spec run was measured
    #: (0: the verify stands in), and the (fastest, slowest) step the evidence allows
    nospec_ms: float = 0.0
    nospec_band: tuple[float, float] | None = None
    #: GPU time the draft forwards run under while the CPU still prepares the verify (a step profile's
    #: idle GPU after the draft graph's replay, scaled to the measured cycle): a cycle bound by the CPU
    #: pays for drafting only past it (0: the draft's GPU time adds to the cycle)
    hidden_ms: float = 0.0
    #: the share of the profiled cycle its kernels fill (:func:`kernel_share`; None: no step profile
    #: with kernel times): below :data:`CPU_BOUND_SHARE` a step change moves CPU work no profile shows
    kernel_share: float | None = None

    @property
    def cpu_bound(self) -> bool:
        return cpu_bound(self.kernel_share)

    @property
    def gpu_bound(self) -> bool:
        return gpu_bound(self.kernel_share)

    def nospec_step(self) -> tuple[float, float, float]:
        """(estimate, fastest, slowest) no-spec decode step in ms: :attr:`nospec_ms` and its band where a
        step profile gave them, else the verify (a fit's verify *is* the measured no-spec step)."""
        if self.nospec_ms > 0:
            lo, hi = self.nospec_band or (self.nospec_ms, self.nospec_ms)
            return self.nospec_ms, min(lo, self.nospec_ms), max(hi, self.nospec_ms)
        return self.verify_ms, self.verify_ms, self.verify_ms

    def drafts(self, settings: SpecSettings) -> int:
        """How many times ``draft_step_ms`` is paid at ``settings``."""
        return settings.draft_forwards if self.per_forward else settings.steps

    @property
    def regime(self) -> str:
        """``overlap`` (the draft's GPU work runs under the CPU's: the cycle is the longer of the two) or
        ``additive`` (each part's time adds to the cycle)."""
        return "overlap" if self.hidden_ms > 0 else "additive"

    def draft_ms(self, settings: SpecSettings) -> float:
        """What the draft forwards add to the cycle at ``settings``: their time, less what hides under
        the CPU's preparation of the verify (``max(CPU, GPU)`` where the two overlap)."""
        gpu = self.drafts(settings) * self.draft_step_ms
        return max(0.0, gpu - self.hidden_ms)

    def cycle_ms(self, settings: SpecSettings, accept: float) -> float:
        n = self.drafts(settings)
        runner = self.draft_fixed_ms if (n > 0 or not self.per_forward) else 0.0
        tokens = self.token_ms * (settings.tokens - self.measured_tokens) if self.measured_tokens else 0.0
        return (
            self.draft_ms(settings)
            + runner
            + self.verify_ms
            + tokens
            + self.fixed_ms
            + accept * self.per_token_ms
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "draft_step_ms": round(self.draft_step_ms, 3),
            "verify_ms": round(self.verify_ms, 3),
            "per_token_ms": round(self.per_token_ms, 3),
            "fixed_ms": round(self.fixed_ms, 3),
            "source": self.source,
        }
        if self.per_forward:
            out["draft_per"] = "forward"
            out["draft_fixed_ms"] = round(self.draft_fixed_ms, 3)
            out["regime"] = self.regime
        if self.hidden_ms > 0:
            out["hidden_ms"] = round(self.hidden_ms, 3)
        if self.token_ms:
            out["token_ms"] = round(self.token_ms, 4)
        if self.nospec_ms > 0:
            out["nospec_step_ms"] = round(self.nospec_ms, 3)
            if self.nospec_band is not None:
                out["nospec_step_band_ms"] = [round(x, 3) for x in self.nospec_band]
        return out


@dataclass(frozen=True)
class Measurement:
    """What one spec run measured at one concurrency, for predicting other settings: the settings it
    ran, per-position acceptance, the cycle's parts and the no-spec step (None when no no-spec run)."""

    settings: SpecSettings
    rates: tuple[float, ...]
    parts: CycleParts
    nospec_step_ms: float | None = None
    concurrency: int = 1


@dataclass(frozen=True)
class Prediction:
    """Predicted for ``settings``: accept length, cycle ms, per-request tok/s and the speedup over the
    no-spec step (None without one), and the per-request tok/s the parts' alternatives give
    (``tok_s_low`` … ``tok_s_high``: the model's own band). Always a prediction: say so wherever it is
    shown."""

    settings: SpecSettings
    accept: float
    cycle_ms: float
    tok_s: float
    speedup: float | None
    tok_s_low: float | None = None
    tok_s_high: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "steps": self.settings.steps,
            "topk": self.settings.topk,
            "draft_tokens": self.settings.tokens,
            "accept_len": round(self.accept, 3),
            "cycle_ms": round(self.cycle_ms, 3),
            "tok_s_per_request": round(self.tok_s, 3),
            "speedup": None if self.speedup is None else round(self.speedup, 4),
        }
        if self.tok_s_low is not None and self.tok_s_high is not None:
            out["tok_s_per_request_band"] = [round(self.tok_s_low, 3), round(self.tok_s_high, 3)]
        return out


# ------------------------------------------------------------------------------------- acceptance


def finite(x: Any) -> TypeGuard[float]:
    """A real, finite number (not a bool, NaN or inf): what every figure read from a recording must be."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def accept_len(rates: Sequence[float], depth: int) -> float:
    """Mean tokens per verify for ``depth`` positions accepted with conditional ``rates`` (the last
    rate repeats past the measured positions; no rates: nothing is accepted but the bonus token)."""
    total, reach = 1.0, 1.0
    for j in range(max(0, depth)):
        if not rates:
            break
        p = rates[j] if j < len(rates) else rates[-1]
        reach *= min(max(p, 0.0), 1.0)
        total += reach
    return total


def rates_from_histogram(hist: Sequence[Any]) -> tuple[float, ...]:
    """Conditional acceptance per draft position from ``hist[k]`` = verifies that accepted exactly
    ``k`` draft tokens (``spec_correct_drafts_histogram``): ``P(j | j−1) = Σ_{k≥j} / Σ_{k≥j−1}``.
    Positions nobody reached are left out; a damaged histogram (negative, non-finite) gives ()."""
    counts = [float(c) for c in hist if finite(c)]
    if len(counts) != len(hist) or any(c < 0 for c in counts) or sum(counts) <= 0:
        return ()
    tail = [0.0] * (len(counts) + 1)
    for k in range(len(counts) - 1, -1, -1):
        tail[k] = tail[k + 1] + counts[k]
    out = []
    for j in range(1, len(counts)):
        if tail[j - 1] <= 0:
            break
        out.append(tail[j] / tail[j - 1])
    return tuple(out)


def reach_from_histogram(hist: Sequence[Any]) -> tuple[float, ...]:
    """Unconditional acceptance per position: the share of verifies that accepted draft token ``j``
    (``Σ_{k≥j} hist[k] / Σ hist``), for j = 1 … the deepest position in the histogram."""
    rates = rates_from_histogram(hist)
    out, reach = [], 1.0
    for p in rates:
        reach *= p
        out.append(reach)
    return tuple(out)


def rates_from_mean(accept: float, depth: int) -> tuple[float, ...]:
    """One rate for every position that gives mean ``accept`` at ``depth`` (the geometric assumption,
    used when the server returns no histogram): the root of ``1 + p + … + p^depth = accept``."""
    if not finite(accept) or depth < 1:
        return ()
    target = min(max(accept, 1.0), depth + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if accept_len((mid,), depth) < target:
            lo = mid
        else:
            hi = mid
    return ((lo + hi) / 2,) * depth


# -------------------------------------------------------------------------------------- the parts


# ------------------------------------------------------------------------------------ prediction


def predict(m: Measurement, settings: SpecSettings | None = None) -> Prediction:
    """Per-request tok/s (and speedup over the no-spec step) the model gives at ``settings`` (the
    measured ones when None). The measured setting reproduces its own cycle by construction."""
    s = settings or m.settings
    a = accept_len(m.rates, s.depth) if m.rates else 1.0
    cycle = m.parts.cycle_ms(s, a)
    tok = 1000.0 * a / cycle if cycle > 0 else 0.0
    speedup = None
    if m.nospec_step_ms and m.nospec_step_ms > 0 and cycle > 0:
        speedup = a * m.nospec_step_ms / cycle
    low = high = None
    if m.parts.alternatives:
        toks = [tok] + [1000.0 * a / c for alt in m.parts.alternatives if (c := alt.cycle_ms(s, a)) > 0]
        low, high = min(toks), max(toks)
    return Prediction(s, a, cycle, tok, speedup, low, high)


def neighbours(s: SpecSettings, *, max_steps: int = 8) -> list[SpecSettings]:
    """The step counts around ``s`` at its topk (1 … steps + 2, capped), for "what would pay"."""
    out = []
    for k in range(1, min(max_steps, s.steps + 2) + 1):
        tokens = None if s.topk == 1 else max(2, (s.draft_tokens or s.tokens) + (k - s.steps) * s.topk)
        out.append(replace(s, steps=k, draft_tokens=tokens))
    return out


@dataclass(frozen=True)
class BreakEven:
    """The accept length a cycle needs to match the no-spec step at these settings: ``accept`` (None:
    no accept length can, because each accepted token costs at least a whole no-spec step), whether
    the settings can reach it (at most ``max_accept`` per verify), and the verify time that would make
    today's accept length pay (None: none would)."""

    accept: float | None
    max_accept: int
    needed_verify_ms: float | None

    @property
    def reachable(self) -> bool:
        return self.accept is not None and self.accept <= self.max_accept


def break_even(parts: CycleParts, settings: SpecSettings, nospec_step_ms: float, accept: float) -> BreakEven:
    """Solve ``a × step = steps × draft + verify + a × per_token`` for ``a`` (the cycle grows with the
    accepted tokens, so a better drafter also pays more per cycle), and for the verify at ``accept``."""
    fixed = settings.steps * parts.draft_step_ms + parts.verify_ms + parts.fixed_ms
    room = nospec_step_ms - parts.per_token_ms
    need = fixed / room if room > 0 else None
    verify = accept * room - settings.steps * parts.draft_step_ms - parts.fixed_ms
    return BreakEven(need, settings.max_accept, verify if verify > 0 else None)
