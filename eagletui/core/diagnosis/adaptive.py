"""Adaptive speculation, visible: which step count ran over time against the running batch size, and a
throughput collapse at a batch-size threshold.

SGLang's adaptive speculation (``--speculative-adaptive``, 0.5.17 and 0.5.23:
``speculative/adaptive_spec_params.py``) keeps one step count per batch-size slot (default slots 1, 8, 32,
64 with candidate steps ``[1, 3, 7]`` / ``[1, 3, 5, 7]`` at 1, ``[0, 1, 3]`` at 8, ``[0, 1]`` at 32, ``[0]``
at 64; 0 drafts nothing) and logs every change (``adaptive`` ``update`` notes). The decode lines between
two changes give the running batch size and the throughput of that segment.

A **collapse**: a step change after which the segment's throughput per running request falls below
:data:`COLLAPSE` of the segment before it (vLLM's dynamic speculation showed 232 → 24–157 tok/s at a
batch-size threshold).
"""

from __future__ import annotations

import math
from typing import Any

from eagletui.core.diagnosis.fold import Diagnosis, LaunchObs
from eagletui.core.servers.spec import adaptive_fallback, adaptive_fallback_text

COLLAPSE = 0.6
#: Decode samples on each side of a change that judge it.
WINDOW = 8
#: The most the mean running batch may differ (as a ratio) between the two sides of a change it judges
SAME_BATCH = 1.5


def _segment(rows: list[tuple[int, int, float, float | None]]) -> tuple[float, float] | None:
    """(mean running batch, mean gen tok/s per running request) of these decode samples."""
    ok = [(r, g) for _, r, g, _ in rows if r > 0 and g > 0]
    if not ok:
        return None
    run = sum(r for r, _ in ok) / len(ok)
    per = sum(g / r for r, g in ok) / len(ok)
    return run, per


def _around(
    samples: list[tuple[int, int, float, float | None]], at: int
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The segments of at most :data:`WINDOW` samples (decode lines, or bulk runs of them) just before
    and just after decode line ``at``."""
    before = [s for s in samples if s[0] <= at][-WINDOW:]
    after = [s for s in samples if s[0] > at][:WINDOW]
    return _segment(before), _segment(after)


def _running_at(samples: list[tuple[int, int, float, float | None]], at: int) -> int | None:
    best = None
    for i, r, _, _ in samples:
        if i <= at:
            best = r
        else:
            break
    return best


def fallback_diagnosis(o: LaunchObs) -> Diagnosis | None:
    """``--speculative-adaptive`` asked for, static steps served: the server's own WARNING, or (when the
    log did not show it) the launch's args judged by the same rule the profile check and the preflight
    use (:func:`~eagletui.core.servers.spec.adaptive_fallback`)."""
    said = o.note("adaptive", "fallback")
    reason = said.value.get("reason") if said is not None and isinstance(said.value, dict) else None
    source = "log"
    if not reason:
        reason = adaptive_fallback(o.asked) if o.asked else None
        source = "profile"
    if not reason:
        return None
    return Diagnosis(
        kind="adaptive_fallback",
        text=adaptive_fallback_text(str(reason)[:300]),
        evidence=(
            f"'speculative_adaptive disabled: {str(reason)[:120]}' (log)"
            if source == "log"
            else "the launch's flags, by SGLang's adaptive_unsupported_reason (profile)"
        ),
        hint="--speculative-eagle-topk 1 (adaptive runs a chain), or drop --speculative-adaptive",
        level="warn",
        source=source,
        data={"reason": str(reason)[:300]},
    )


def _num(v: Any) -> float:
    """A seconds or GB value of a note (a recording's may be anything): 0 unless a finite number."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else 0.0


def _tiers_text(swaps: int, cands: Any, built: list[dict[str, Any]]) -> str:
    """The swaps logged, the first slot's candidates and the extra tiers' graphs, captured after the
    launch's own (``Built adaptive runtime state``), as the steps line's tail."""
    text = f"; {swaps} tier swap{'s' if swaps != 1 else ''} logged" if swaps else ""
    if cands:
        text += f"; candidate steps {cands}"
    if built:
        secs = sum(_num(b.get("elapsed")) for b in built)
        gb = sum(_num(b.get("mem_gb")) for b in built)
        text += f"; {len(built)} extra tier{'s' if len(built) != 1 else ''} captured at startup: {secs:.1f} s, {gb:.2f} GB"
    return text


def _steps_text(o: LaunchObs, start: Any, swaps: int, steps_seq: list[tuple[Any, ...]]) -> str:
    """The steps line's head: the EMA's changes, else the batch size's swaps, else one tier all along (or,
    for a launch that never decoded, that it did not serve)."""
    if steps_seq:
        shown = "; ".join(
            f"{a} → {b}" + (f" at running batch {bs}" if bs is not None else "") + (f" ({t})" if t else "")
            for a, b, bs, _, t in steps_seq[:8]
        )
        more = f" (+{len(steps_seq) - 8} more)" if len(steps_seq) > 8 else ""
        return f"adaptive speculation: started at steps {start}; {shown}{more}"
    if swaps:
        return f"adaptive speculation: started at steps {start}; the batch size swapped the tier (no EMA change logged)"
    if not o.decode_lines and not o.benches:
        # a launch that died building its tiers (sglang#30549) never ran a step: "all along" would be a claim
        return f"adaptive speculation on, steps {start}: no decode logged (the server did not serve)"
    return f"adaptive speculation on: steps {start} all along (no change logged)"


def adaptive_diagnoses(o: LaunchObs, fmt: Any) -> list[Diagnosis]:
    cfg = o.note("adaptive", "config")
    on = cfg is not None and isinstance(cfg.value, dict) and cfg.value.get("on")
    init = o.note("adaptive", "init")
    updates = [n for n in o.note_list("adaptive", "update") if isinstance(n.value, dict)]
    fallback = fallback_diagnosis(o)
    if fallback is not None:
        return [fallback]
    if not (on or init or updates):
        return []
    out: list[Diagnosis] = []
    swaps = len(o.note_list("adaptive", "switch"))
    start = (
        init.value.get("steps")
        if init is not None and isinstance(init.value, dict)
        else o.facts.get("spec_steps")
    )
    cands = init.value.get("candidates") if init is not None and isinstance(init.value, dict) else None
    steps_seq = []
    for n in updates:
        bs = _running_at(o.samples, n.at_decode)
        steps_seq.append((n.value.get("from"), n.value.get("to"), bs, n.at_decode, n.log_time))
    text = _steps_text(o, start, swaps, steps_seq)
    built = [n.value for n in o.note_list("adaptive", "built") if isinstance(n.value, dict)]
    text += _tiers_text(swaps, cands, built)
    out.append(
        Diagnosis(
            kind="adaptive_steps",
            text=text,
            evidence=f"{len(updates)} 'Adaptive spec params updated' lines; #running-req of the Decode lines around them (log)",
            source="log",
            data={
                "start": start,
                "changes": [
                    {"from": a, "to": b, "running": bs, "decode_line": i} for a, b, bs, i, _ in steps_seq
                ],
                "candidates": cands,
                "swaps": swaps,
                "built": built,
            },
        )
    )
    for a, b, _bs, at, t in steps_seq:
        before, after = _around(o.samples, at)
        if before is None or after is None:
            continue
        # like for like: per-request speed falls with the batch anyway, so only a change whose two sides
        # ran about the same batch is judged (the real H200 run went from c=1 to c=16 right after a swap)
        if max(before[0], after[0]) > SAME_BATCH * min(before[0], after[0]):
            continue
        if after[1] < COLLAPSE * before[1]:
            out.append(
                Diagnosis(
                    kind="adaptive_collapse",
                    text=(
                        f"throughput collapse when adaptive speculation went from steps {a} to {b} at running batch "
                        f"≈{after[0]:.0f}: {before[1]:.1f} → {after[1]:.1f} tok/s per request"
                    ),
                    evidence=f"gen throughput ÷ #running-req of {WINDOW} Decode lines before and after the change"
                    + (f" at {t}" if t else "")
                    + " (log)",
                    hint=fmt.advice("adaptive_config", o.version, {}),
                    level="warn",
                    data={
                        "from": a,
                        "to": b,
                        "running": after[0],
                        "before_per_request": before[1],
                        "after_per_request": after[1],
                    },
                )
            )
            break
    return out
