"""Where a cycle's parts come from: a step profile's split of a measured cycle, or a fit from what a spec
run and its no-spec reference measured (:func:`fit_parts`), with the alternatives the data leaves open
(the band a prediction carries).

Apart from the model (:mod:`eagletui.core.cycle.model`) because this is the part that reads evidence —
profiles, per-request acceptance, a second drafter — and says how sure it is; the model only does the
arithmetic of a cycle once its parts are known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from eagletui.core.cycle.model import CycleParts, SpecSettings, cpu_bound, finite, gpu_bound, kernel_share

#: The draft runner's own work (its buffer copies, attention metadata, the graph launch) as a share of
#: the time from the draft range's start to its replay: 0.76-0.84 ms of 1.45 in the lent H200's steps-3
#: trace of SGLang 0.5.17 (the rest is ``prepare_for_draft``, which every step count runs). The band
#: runs from the runner's kernels alone to the whole lead.
RUNNER_SHARE = 0.55
RUNNER_BAND = (0.3, 1.0)
#: (the draft's preparation, the draft runner's own work, one draft forward) in the same trace, ms: the
#: lead of 1.45 ms split by :data:`RUNNER_SHARE`, and its graph replay of 1.92 ms over two forwards; a
#: fit without a profile splits its drafting in these proportions (:func:`_drafting`)
DRAFT_SPLIT = (0.65, 0.8, 0.96)
#: Fewest requests, and least spread of their accept lengths, from which a slope of the cycle in the
#: accept length is read (the exact drafter accepts the same everywhere: no slope can be read then).
SLOPE_MIN_N = 8
SLOPE_MIN_SPREAD = 0.3
#: A no-spec decode step estimated from a speculative cycle (:func:`nospec_from_cycle`): the share of
#: the cycle's CPU-bound gaps it pays beyond the verify alone, and the range the evidence allows. A
#: cycle hands off between its GPU parts three times and once more to the scheduler (draft → verify →
#: draft extend → result and the next batch), CPU work each; a no-spec step makes one hand-off, and its
#: overlap scheduler hides part of that behind the forward. Measured on the lent H200 (SGLang 0.5.17,
#: tiny pairs, four sessions' steps-3 launches against no-spec launches of the same host): 0.13-0.37 of
#: the gaps, moving with the host's state, so the centre is the middle of the band, which runs from the
#: verify alone (no gap at all: the fastest a step can be) to half the gaps (docs/economics.md).
NOSPEC_GAP_SHARE = 0.25

NOSPEC_GAP_BAND = (0.0, 0.5)
def cpu_bound_note(profile: Mapping[str, Any]) -> str:
    """What a source adds when its profile's cycle is CPU-bound
    (:data:`~eagletui.core.cycle.model.CPU_BOUND_SHARE`), else "": the share and what it was taken of
    (the cycle's span, or where an older profile has none, the three parts' spans without the gaps)."""
    busy, of = profile_kernel_share(profile)
    if busy is None or not cpu_bound(busy):
        return ""
    return (
        f"; CPU-bound: kernels fill {busy * 100:.0f} % of {of}, so a step change moves the scheduler's CPU "
        "work, which no profile shows (measure before trusting this)"
    )


def profile_kernel_share(profile: Mapping[str, Any]) -> tuple[float | None, str]:
    """(the share of the profiled cycle its kernels fill, what it is a share of): the parts' kernels ÷
    the cycle's span (``cycle_ms``, :func:`~eagletui.core.cycle.model.kernel_share`, as ``eagletui
    trace`` prints it); a profile recorded before it had ``cycle_ms`` falls back to the sum of the
    draft, verify and extend spans (the gaps between them left out: a higher share). (None, "") without
    kernel times."""
    shares, kernels = profile.get("shares"), profile.get("kernels")
    if not (isinstance(shares, Mapping) and isinstance(kernels, Mapping)):
        return None, ""
    busy = sum(float(v) for v in kernels.values() if finite(v))
    span = _num(profile, "cycle_ms")
    if span > 0:
        return kernel_share(busy, span), "the cycle"
    return kernel_share(busy, sum(float(v) for v in shares.values() if finite(v))), (
        "the draft, verify and extend spans"
    )


def fit_parts(
    settings: SpecSettings,
    cycle_ms: float,
    accept: float,
    nospec_step_ms: float,
    *,
    other: tuple[float, float] | None = None,
    profile: Mapping[str, Any] | None = None,
    accept_slope: float | None = None,
    verify_token_ms: float | None = None,
) -> CycleParts | None:
    """The cycle's parts from what was measured, with the alternatives the evidence leaves open
    (``CycleParts.alternatives``: a prediction's band spans them).

    ``other`` is (cycle_ms, accept) of a second spec run at the same settings with another drafter;
    ``profile`` a step profile's split (``draft_step_ms``, ``verify_ms``, optional ``per_token_ms``; or
    the spans of the parts, with their graph replays where the profile has them), which wins when
    given; ``accept_slope`` the cycle's growth per unit of accept length read from the run's own requests
    (:func:`accept_slope`); ``verify_token_ms`` what one more draft token a request adds to this
    concurrency's verify, read from the launch's cycles at several concurrencies (:func:`verify_token_slope`),
    used where a step profile shows the GPU bounds the cycle."""
    slope = accept_slope if finite(accept_slope) and accept_slope >= 0 else None
    if profile:
        parts = _from_profile(settings, cycle_ms, accept, profile, slope, verify_token_ms)
        if parts is not None:
            return parts
    if not (finite(cycle_ms) and finite(accept) and finite(nospec_step_ms)):
        return None
    if cycle_ms <= 0 or nospec_step_ms <= 0 or accept < 1:
        return None
    return _estimate(settings, cycle_ms, accept, nospec_step_ms, other, slope)


def _from_profile(
    settings: SpecSettings,
    cycle_ms: float,
    accept: float,
    profile: Mapping[str, Any],
    slope: float | None,
    verify_token_ms: float | None = None,
) -> CycleParts | None:
    d, v = profile.get("draft_step_ms"), profile.get("verify_ms")
    if finite(d) and finite(v) and d >= 0 and v > 0:
        e = profile.get("per_token_ms")
        return CycleParts(float(d), float(v), float(e) if finite(e) and e >= 0 else 0.0, "step profile")
    shares = profile.get("shares")
    if not (isinstance(shares, dict) and finite(cycle_ms) and cycle_ms > 0 and finite(accept) and accept >= 1):
        return None
    ds, vs, es = (shares.get(k) for k in ("draft", "verify", "draft_extend"))
    if not (finite(ds) and finite(vs) and finite(es) and vs > 0 and ds >= 0 and es >= 0):
        return None
    replay = profile.get("replay")
    if isinstance(replay, dict) and _replayed(replay):
        return _split_replay(
            settings, cycle_ms, accept, float(ds), float(vs), float(es), replay, profile, slope, verify_token_ms
        )
    kernels = profile.get("kernels")
    kernels = kernels if isinstance(kernels, dict) else {}
    dk, ek = kernels.get("draft"), kernels.get("draft_extend")
    fw = profile.get("draft_forwards")
    return _split(
        settings,
        cycle_ms,
        accept,
        float(ds),
        float(vs),
        float(es),
        draft_kernel=float(dk) if finite(dk) and 0 <= dk <= ds else None,
        extend_kernel=float(ek) if finite(ek) and 0 <= ek <= es else None,
        draft_forwards=float(fw) if finite(fw) and fw > 0 else 0.0,
    )


def _estimate(
    settings: SpecSettings,
    cycle_ms: float,
    accept: float,
    nospec_step_ms: float,
    other: tuple[float, float] | None,
    slope: float | None,
) -> CycleParts:
    """No profile: the verify costs about a no-spec step; what the rest of the cycle is depends on what
    else was measured. A per-token part from the run's own requests (``slope``) or from a second drafter
    settles it.

    Without either, one run cannot split the rest between the draft steps and what every cycle does
    whatever its steps (the draft extend, the draft runner's preparation, the verify's bookkeeping): it
    may be anything from all fixed to all drafting, or work per accepted token, and the parts carry all
    three (the band). The centre is the middle of what the evidence allows: a draft step costs half of
    what all drafting would give, the rest is fixed. "All drafting", the centre before, is the
    mechanism's upper bound (the draft extend is at least one more forward of the draft model), and put
    every prediction at its band's edge. The real server lies on both sides of the middle: on the lent
    H200 (SGLang 0.5.17, the same tiny pair, CUDA graphs) one step fewer saved 0.64-1.0 ms of a 4.5-4.8 ms
    cycle in one session (run 1: 0.57-0.9 of all drafting) and the cycle grew 0.15-0.35 ms a step in
    another (the grid: 0.2-0.45 of it); the draft forwards' layers alone (1 of 8) would have priced the
    first at a sixth (docs/real-sglang.md)."""
    per_token, how = 0.0, ""
    if slope is not None:
        per_token, how = slope, "per-token part read from the run's own requests"
    elif other is not None and finite(other[0]) and finite(other[1]) and abs(other[1] - accept) >= 0.2:
        fitted = (other[0] - cycle_ms) / (other[1] - accept)
        if fitted > 0:
            per_token, how = fitted, "per-token part fitted from two drafters"
    verify = min(nospec_step_ms, cycle_ms - per_token * accept)
    if verify <= 0:  # the fit explains the whole cycle by the tokens: keep what was measured
        per_token, verify, how = 0.0, min(nospec_step_ms, cycle_ms), ""
    rest = max(0.0, cycle_ms - verify - per_token * accept)
    src = "estimate: verify ≈ one no-spec step; "
    if how:
        return _drafting(settings, rest, verify, per_token, src + how)
    drafting = CycleParts(rest / settings.steps, verify, 0.0, src + "the rest of the cycle taken as drafting")
    fixed = CycleParts(0.0, verify, 0.0, src + "the rest of the cycle taken as fixed", fixed_ms=rest)
    per_accept = CycleParts(0.0, verify, rest / accept, src + "the rest of the cycle taken as per accepted token")
    step = rest / settings.steps / 2.0
    return CycleParts(
        step,
        verify,
        0.0,
        src + "the rest of the cycle unsplit (one drafter, no profile): a draft step half of all drafting, "
        "the rest fixed; anywhere from all fixed to all drafting or per accepted token",
        fixed_ms=max(0.0, rest - settings.steps * step),
        alternatives=(fixed, drafting, per_accept),
    )


def _drafting(settings: SpecSettings, rest: float, verify: float, per_token: float, src: str) -> CycleParts:
    """Parts whose drafting is ``rest`` ms at ``settings``, split as SGLang drafts: every step count runs
    the draft's preparation, the draft runner (its copies, metadata, graph launch) runs whenever the draft
    model does, and each step but the first is one forward of it; steps 1 runs neither (0.5.17's
    ``eagle_worker_v2``: no draft CUDA-graph runner below two steps, the loop breaks before the last
    step's forward). The split is the lent H200's steps-3 trace's: preparation 0.65 ms, runner 0.8 ms, a
    forward 0.96 ms (:data:`DRAFT_SPLIT`). Cutting the rest into equal steps, as before, kept a third of
    it at steps 1 where that trace keeps a fifth; the equal split stays in the band. With one step
    measured the split cannot be read, and the equal one stands."""
    equal = CycleParts(rest / settings.steps, verify, per_token, src)
    forwards = settings.draft_forwards
    if forwards < 1 or rest <= 0:
        return equal
    prep, runner, forward = DRAFT_SPLIT
    unit = rest / (prep + runner + forward * forwards)
    return CycleParts(
        forward * unit,
        verify,
        per_token,
        src + "; drafting split as SGLang drafts: preparation, the draft runner from two steps on, a forward "
        "a step past the first",
        fixed_ms=prep * unit,
        draft_fixed_ms=runner * unit,
        per_forward=True,
        alternatives=(replace(equal, source=src + " (drafting in equal steps)"),),
    )


def _replayed(replay: Mapping[str, Any]) -> bool:
    """The profile says how its parts were replayed (recordings from before do not)."""
    return any(isinstance(replay.get(k), dict) for k in ("draft", "verify", "draft_extend"))


def _num(d: Any, key: str) -> float:
    v = d.get(key) if isinstance(d, Mapping) else None
    return float(v) if finite(v) and v >= 0 else 0.0


def _split_replay(
    settings: SpecSettings,
    cycle_ms: float,
    accept: float,
    draft: float,
    verify: float,
    extend: float,
    replay: Mapping[str, Any],
    profile: Mapping[str, Any],
    slope: float | None,
    verify_token_ms: float | None = None,
) -> CycleParts:
    """The measured cycle split by what the GPU and the CPU really spend, read from a step profile's
    CUDA-graph replays (SGLang 0.5.17 on the lent H200, its steps-3 trace: the draft's replay 122
    kernels in 0.235 ms for 2 draft forwards; the draft range 1.92 ms, most of it eager preparation).

    * a **draft forward** costs its replay's GPU span (``steps − 1`` forwards replayed; a profile of a
      steps-1 launch has none, and the draft extend's replay, one draft-model forward, stands in);
      drafted eagerly (forwards nested in the range), each forward costs its share of the whole range;
    * the **draft runner** (:data:`RUNNER_SHARE` of the time before its replay) is paid whenever the
      draft model runs at all, so dropping to steps 1 saves it too;
    * the profiler inflates every CPU-bound gap (× 1.6-3.3 seen), not the replays: the CPU-bound
      quantities are scaled by the measured cycle ÷ the profiled period;
    * the **verify** stands in for a no-spec step as before (its span and one forward's share of the
      gap); the **draft extend** is padded to the draft tokens by SGLang, so it is fixed per cycle, not
      per accepted token, unless the run's own requests show a slope (``slope``);
    * where the GPU idles after the draft's replay (:func:`_overlap`), more forwards hide under the CPU's
      preparation of the verify and cost the cycle only past that idle; what the measured forwards cost
      goes with the draft graph (steps 1 captures none);
    * where the GPU bounds the cycle, the verify grows by ``verify_token_ms`` a draft token (the launch's
      cycles across concurrencies: :func:`verify_token_slope`), fixed in them as an alternative;
    * what is left of the measured cycle is fixed work.

    The alternatives span the draft runner's share (:data:`RUNNER_BAND`), without a slope an extend
    whose work would follow the accepted tokens, and in the overlap regime the additive cycle and a
    steps 1 that saves the runner alone."""
    period = _num(profile, "period_ms")
    total = draft + verify + extend
    sigma = min(1.0, cycle_ms / period) if period > 0 else (min(1.0, cycle_ms / total) if total > 0 else 1.0)
    fwd = settings.draft_forwards
    empty: Mapping[str, Any] = {}
    rd, rx = (replay[k] if isinstance(replay.get(k), Mapping) else empty for k in ("draft", "draft_extend"))
    nested = _num(profile, "draft_forwards")
    per_forward, how = _forward_ms(fwd, draft * sigma, nested, rd, rx)
    lead = _num(rd, "lead_ms") * sigma
    runner = RUNNER_SHARE * lead
    verify_ms = _verify_standin(verify, total, cycle_ms, settings.steps)
    per_token = slope if slope is not None else 0.0
    tokens = settings.tokens
    busy = profile_kernel_share(profile)[0]
    hidden, regime = _overlap(rd, per_forward, nested, sigma, replayed="replay" in how, kernel_share=busy)
    grow = _token_growth(verify_token_ms, busy)

    def parts(
        runner_ms: float, e: float, label: str, hide: float = hidden, graph: bool = True, grow: float = grow
    ) -> CycleParts:
        # the hidden forwards' share goes with the draft graph (steps 1 captures none)
        share = min(fwd * per_forward, hide) if (graph and hide > 0 and fwd > 0) else 0.0
        p = CycleParts(
            per_forward, verify_ms, e, label, draft_fixed_ms=runner_ms + share, per_forward=True,
            measured_tokens=tokens, hidden_ms=hide, token_ms=grow,
        )
        used = p.draft_ms(settings) + (p.draft_fixed_ms if fwd > 0 else 0.0) + verify_ms + accept * e
        return replace(p, fixed_ms=max(0.0, cycle_ms - used))

    src = _replay_source(how, runner, regime, grow, profile)
    nospec, band = _nospec(cycle_ms, verify, total, sigma, replay, profile, busy)
    base = replace(parts(runner, per_token, src), nospec_ms=nospec, nospec_band=band, kernel_share=busy)
    alts = [parts(RUNNER_BAND[0] * lead, per_token, src), parts(RUNNER_BAND[1] * lead, per_token, src)]
    if slope is None:
        alts.append(parts(runner, _num(rx, "replay_ms") / accept, src + " (extend per accepted token)"))
    if hidden > 0:  # what the profile cannot tell (:func:`_overlap`): the additive cycle; a cheap steps 1
        alts.append(parts(runner, per_token, src + " (additive: nothing hidden)", 0.0))
        alts.append(parts(runner, per_token, src + " (steps 1 saves the runner alone)", graph=False))
    if grow > 0:  # the growth read across concurrencies may be the batch's other work, not the verify's
        alts.append(parts(runner, per_token, src + " (the verify fixed in the draft tokens)", grow=0.0))
    return replace(base, alternatives=tuple(alts))


def _verify_standin(verify: float, total: float, cycle_ms: float, steps: int) -> float:
    """The verify as a no-spec step's stand-in, as the spans-only split has it: its span (scaled down
    where the spans exceed the measured cycle) and one forward's share of the gap to it."""
    scale = min(1.0, cycle_ms / total) if total > 0 else 1.0
    gap = max(0.0, cycle_ms - total) / (steps + 2)
    return min(verify * scale + gap, cycle_ms)


def _replay_source(how: str, runner: float, regime: str, grow: float, profile: Mapping[str, Any]) -> str:
    """What the profile path's parts are read from, as a prediction's source says it."""
    src = f"step profile: {how}; the draft runner's own work {runner:.2f} ms; the rest of the cycle fixed"
    src += regime
    if grow > 0:
        src += f"; the verify grows {grow:.2f} ms a draft token (this launch's cycles across concurrencies)"
    return src + cpu_bound_note(profile)


def _token_growth(verify_token_ms: float | None, busy: float | None) -> float:
    """What one more draft token a request adds to the verify at this concurrency, where the GPU bounds
    the cycle (a CPU-bound cycle grows with the batch by the scheduler's work, not the verify's); 0 else."""
    if not gpu_bound(busy) or not finite(verify_token_ms) or verify_token_ms <= 0:
        return 0.0
    return float(verify_token_ms)


def _forward_ms(
    fwd: int, draft_ms: float, nested: float, rd: Mapping[str, Any], rx: Mapping[str, Any]
) -> tuple[float, str]:
    """What one draft forward costs the GPU, ms, and how it was read: its share of the (scaled) draft range
    where it ran eagerly, its share of the draft graph's replay, else the draft extend's replay."""
    if nested > 0 and fwd > 0:
        return draft_ms / max(nested, fwd), "eagerly drafted: a forward costs its share of the draft range"
    if _num(rd, "replay_kernels") > 0 and fwd > 0:
        return _num(rd, "replay_ms") / fwd, "the draft forwards in one CUDA-graph replay, a forward = its GPU span"
    return (
        _num(rx, "replay_ms") or _num(rd, "replay_ms"),
        "a draft forward ≈ the draft extend's replay (the profile ran no draft forward)",
    )


def _overlap(
    rd: Mapping[str, Any],
    per_forward: float,
    nested: float,
    sigma: float,
    *,
    replayed: bool,
    kernel_share: float | None = None,
) -> tuple[float, str]:
    """How much draft GPU time hides under the CPU's work, ms, and how the source says it.

    A cycle of a small model is bound by the scheduler's CPU work: on the lent H200 (SGLang 0.5.17, the
    tiny pair) the draft graph's replay of 0.24 ms is followed by 1.8-3.8 ms profiled of idle GPU while
    the CPU prepares the verify (all four steps-3 traces of issues 25-32), and the isolated grid measured
    steps 2-5 within noise of one cycle at c = 4. So more forwards fill that idle (the profile's
    ``idle_after_ms``, scaled like every CPU-bound gap by ``sigma``) before they delay anything: the cycle
    is the longer of the CPU's path and the GPU's work. Drafted eagerly, each forward is a CPU launch and
    nothing hides; an idle shorter than one forward's replay hides nothing worth a regime; a summary
    without the figure (recorded before) cannot tell, and the additive model stands.

    What the profile cannot tell is whether the CPU's own work grows with the forwards (the graph's
    launch, its buffer copies): on a core shared with five spinning servers (the comb2 grid) each step
    cost 0.4-0.5 ms beside the same trace shape. So the band keeps the additive cycle on its slow side,
    and a steps 1 that saves the draft runner alone.

    Only a CPU-bound cycle hides anything (``kernel_share`` under
    :data:`~eagletui.core.cycle.model.CPU_BOUND_SHARE`): on a
    7B-shaped target on the same H200 (kernels 68 % of the cycle) the GPU also idled 1.3 ms after the draft,
    yet each step from 3 to 5 cost about 0.4 ms of a stream's cycle at c = 1 and 0.9 ms at c = 4, more than
    its 0.26 ms replay: the overlap regime priced steps 4 and 5 13 % fast at c = 4, the additive one 7-10 %
    (tests/test_predict_real_7b.py)."""
    # the kernels' share where the GPU bounds the cycle (nothing hides then), else None
    gpu_share = kernel_share if gpu_bound(kernel_share) else None
    hidden = _num(rd, "idle_after_ms") * sigma if per_forward > 0 and nested <= 0 and gpu_share is None else 0.0
    if per_forward > 0 and hidden >= per_forward:
        return hidden, (
            f"; overlap: the GPU idles {hidden:.2f} ms after the draft's replay while the CPU prepares the "
            "verify, so more draft forwards cost the cycle only past that (the longer of CPU and GPU)"
        )
    if not replayed:
        return 0.0, ""
    if gpu_share is not None:
        return 0.0, (
            f"; additive: kernels fill {gpu_share * 100:.0f} % of the cycle (the GPU bounds it), so the draft's "
            "forwards add to it"
        )
    return 0.0, "; additive: the profile shows no GPU idle after the draft's replay, its time adds to the cycle"


def _nospec(
    cycle_ms: float,
    verify: float,
    total: float,
    sigma: float,
    replay: Mapping[str, Any],
    profile: Mapping[str, Any],
    busy: float | None,
) -> tuple[float, tuple[float, float] | None]:
    """The no-spec step a step profile estimates: by shares where the GPU bounds its cycle, else the
    verify alone and a share of the CPU-bound gaps."""
    span = _num(profile, "cycle_ms")
    if gpu_bound(busy) and span > 0:
        return nospec_gpu_bound(cycle_ms, verify, total, span, replay)
    return nospec_from_cycle(cycle_ms, verify, replay, sigma, max(0.0, cycle_ms - total * sigma))


def nospec_from_cycle(
    cycle_ms: float, verify: float, replay: Mapping[str, Any], sigma: float, gaps_ms: float
) -> tuple[float, tuple[float, float] | None]:
    """A no-spec decode step from a speculative cycle's step profile, ms, and the (fastest, slowest) step
    the evidence allows (None: nothing to spread).

    The verify is one target forward over ``steps + 1`` tokens a request; a no-spec step is one over
    one token, whose GPU time on a memory-bound target is about the same (the verify's replay grew by
    ≈ 0.001 ms a token on the lent H200). So the step is the verify alone — its preparation, scaled as
    every CPU-bound span by ``sigma`` (measured cycle ÷ profiled period), and its replay — plus its share
    of the CPU-bound gaps between the parts (``gaps_ms``, already scaled): :data:`NOSPEC_GAP_SHARE`,
    anywhere in :data:`NOSPEC_GAP_BAND`. The verify alone put the step at 0.44 of what it measured on
    the lent H200 (speculation off predicted +54 … +82 % too high); the share cannot be known without a
    no-spec launch, hence the band. A profile with no gaps (a GPU-bound cycle) gives the verify alone."""
    rv = replay.get("verify") if isinstance(replay.get("verify"), Mapping) else {}
    rep, lead = _num(rv, "replay_ms"), _num(rv, "lead_ms")
    alone = rep + lead * sigma if rep > 0 else verify * sigma
    alone = min(alone, cycle_ms)
    if gaps_ms <= 0:
        return alone, None
    pick = lambda share: min(cycle_ms, alone + share * gaps_ms)  # noqa: E731
    return pick(NOSPEC_GAP_SHARE), (pick(NOSPEC_GAP_BAND[0]), pick(NOSPEC_GAP_BAND[1]))


def nospec_gpu_bound(
    cycle_ms: float, verify: float, parts_ms: float, span_ms: float, replay: Mapping[str, Any]
) -> tuple[float, tuple[float, float] | None]:
    """A no-spec decode step, ms, and its (fastest, slowest), from the step profile of a cycle the GPU
    bounds (its kernels fill at least half of it: :func:`~eagletui.core.cycle.model.cpu_bound`).

    There the profile's absolute times do not carry over: it is taken at its own batch (a burst of
    ``num_steps`` requests), and on a 7B-shaped target on the lent H200 its verify of 5 × 4 tokens spanned
    6.9 ms where the benchmark's whole steps-3 cycle at one request took 7.0 ms (the verify's span as the
    step: speculation off predicted 25 % slow). Their shares carry over: the step is the verify's share
    of the profiled cycle (``verify`` of ``span_ms``) applied to the measured cycle. The hand-offs between
    a cycle's parts (the gaps no part spans, ``span_ms − parts_ms``) are the speculative cycle's own; a
    no-spec step, with its CPU work under the GPU's, pays at most :data:`NOSPEC_GAP_BAND`'s top share of
    them: the slowest edge. The fastest is what any forward pays, the verify's dense GEMMs (every weight
    read once: memory-bound at a few tokens a request) and its all-reduce, since the verify's other
    kernels partly grow with its tokens and a no-spec step has fewer; where the profile carries no GEMM
    figure (recorded before it was kept) the fastest is the verify's share itself."""
    if not (span_ms > 0 and verify > 0):
        return 0.0, None
    rv = replay.get("verify") if isinstance(replay.get("verify"), Mapping) else {}
    scale = cycle_ms / span_ms
    alone = min(verify * scale, cycle_ms)
    slowest = min(cycle_ms, alone + NOSPEC_GAP_BAND[1] * max(0.0, span_ms - parts_ms) * scale)
    floor = (_num(rv, "gemm_ms") + _num(rv, "comm_ms")) * scale
    fastest = floor if 0 < floor < alone else alone
    return alone, ((fastest, slowest) if fastest < slowest else None)


def verify_token_slope(points: Sequence[tuple[int, float]], tokens: int) -> float | None:
    """What one more verified token costs a cycle, ms, read from one launch's cycles at several
    concurrencies ``(concurrency, cycle ms)``: the least-squares slope of the cycle on the tokens each
    cycle verifies (concurrency × ``tokens`` draft tokens a request). A step profile is taken at one
    batch and holds the verify fixed; on a GPU-bound target the verify grows with the tokens it checks,
    so one more draft step costs more at c = 4 than at c = 1 (7B-shaped target on the lent H200: 0.4 ms
    a step at c = 1, 0.9 ms at c = 4, against a 0.26 ms draft replay). None with fewer than two
    concurrencies or a slope below 0 (noise)."""
    pts = [(float(c * tokens), float(ms)) for c, ms in points if c >= 1 and finite(ms) and ms > 0]
    if len({x for x, _ in pts}) < 2 or tokens < 1:
        return None
    return _rising_slope(pts)


def accept_slope(pairs: Sequence[tuple[float, float]]) -> float | None:
    """How much a cycle grows per unit of accept length, read from one benchmark's own requests at
    concurrency 1: ``(accept length, decode tok/s)`` of each request gives its cycle ``1000 × a ÷ tok/s``;
    the least-squares slope of cycle on ``a``. None where the requests cannot tell (fewer than
    :data:`SLOPE_MIN_N`, their accept lengths spread less than :data:`SLOPE_MIN_SPREAD`, or a negative
    slope: noise). At higher concurrency requests share cycles, so the slope says nothing there."""
    pts = [(float(a), 1000.0 * float(a) / float(t)) for a, t in pairs if finite(a) and finite(t) and a >= 1 and t > 0]
    if len(pts) < SLOPE_MIN_N:
        return None
    xs = [a for a, _ in pts]
    if max(xs) - min(xs) < SLOPE_MIN_SPREAD:
        return None
    return _rising_slope(pts)


def _rising_slope(pts: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of y on x over ``(x, y)`` points; None where the x do not spread or the
    slope falls (a cost does not shrink as its driver grows: that is noise)."""
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx <= 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return b if b >= 0 else None


def _split(
    settings: SpecSettings,
    cycle_ms: float,
    accept: float,
    draft: float,
    verify: float,
    extend: float,
    *,
    draft_kernel: float | None = None,
    extend_kernel: float | None = None,
    draft_forwards: float = 0.0,
) -> CycleParts:
    """The measured cycle split by a step profile's GPU spans per cycle of its draft, verify and draft
    extend parts (and, where the profile has them, the kernel time inside each). The measured cycle is
    reproduced; spans longer than it (a profile of a slower moment) are scaled down to it.

    **With kernel times** (what :func:`eagletui.core.runs.economics.profile_parts` passes from a real trace): SGLang
    runs all of a cycle's draft steps in one CUDA-graph replay (0.5.17 ``eagle_worker_v2.draft``:
    ``cuda_graph_runner.execute`` around the whole ``draft_forward``), so one step fewer saves that step's
    kernels, not a launch: ``draft_step_ms`` is the draft's kernel time ÷ steps. Drafted eagerly (the trace
    has the draft's forwards as ranges nested in it: no graph at that batch size), each step also costs
    its launches, so the part of the span around the kernels counts per step in the share of cycles that
    drafted so. The draft extend's kernels run over the accepted tokens (per token); what is left of the
    cycle (the CPU-side time around the replays, the scheduler between the parts) is ``fixed_ms``. On a
    small model that is most of the cycle: the lent H200's tiny EAGLE-3 server spent 0.84 ms of a 3.9 ms
    cycle in kernels, 0.12 ms of it in its 3 draft steps.

    **Spans only** (a recording from before, a hand-made profile): the spans, with the gap to the measured
    cycle once per forward (``steps`` drafts, one verify, one draft extend: ``(cycle − Σ spans) ÷ (steps
    + 2)`` each).

    Either way ``verify_ms`` is the verify's span and one forward's share of the gap: what stands in for a
    no-spec step where no no-spec run was measured."""
    total = draft + verify + extend
    scale = min(1.0, cycle_ms / total) if total > 0 else 1.0
    gap = max(0.0, cycle_ms - total) / (settings.steps + 2)
    verify_ms = verify * scale + gap
    if draft_kernel is None:
        return CycleParts(
            draft * scale / settings.steps + gap,
            verify_ms,
            (extend * scale + gap) / accept,
            "step profile's spans + the gap to the measured cycle per forward",
        )
    eager = min(1.0, draft_forwards / max(1, settings.steps - 1)) if settings.steps > 1 else 0.0
    per_step = (draft_kernel + eager * (draft - draft_kernel)) * scale / settings.steps
    per_token = (extend if extend_kernel is None else extend_kernel) * scale / accept
    fixed = max(0.0, cycle_ms - settings.steps * per_step - verify_ms - accept * per_token)
    how = "eagerly drafted: its launches too" if eager >= 0.5 else "one CUDA-graph replay"
    return CycleParts(
        per_step,
        verify_ms,
        per_token,
        f"step profile: a draft step = its kernels ({how}); the rest of the cycle fixed",
        fixed,
    )
