"""The frontier as lines of text: what ``sweep`` prints, the Markdown export holds and the frontier view
shows where the terminal is too small for a chart.

Reads :meth:`eagletui.core.runs.frontier.Frontier.to_json` (a dict), so a report written earlier and a
live run book print alike. Every text that came from elsewhere (labels, the host) passes
:func:`eagletui.core.textsafe.inert`.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.runs.max_rate import rate_text
from eagletui.core.textsafe import inert


def _num(v: Any, digits: int = 1) -> str:
    return "—" if not isinstance(v, int | float) or isinstance(v, bool) else f"{v:.{digits}f}"


def point_mark(p: dict[str, Any]) -> str:
    """``*`` on the frontier, ``x`` misses the SLO, ``?`` cannot be told, ``·`` dominated."""
    if p.get("meets_slo") is False:
        return "x"
    if p.get("on_frontier"):
        return "*"
    return "?" if p.get("meets") and p.get("meets_slo") is None else "·"


def frontier_rows(f: dict[str, Any], *, all_points: bool = False) -> list[tuple[str, ...]]:
    """(mark, curve, load (concurrency, or request rate and its cap), tok/s per GPU, decode tok/s per user
    (the y axis, headed ``decode/user``: the caption says its unit, and a row fits 80 columns), goodput
    req/s, SLO %) per point: the frontier's points only unless ``all_points``, by
    tok/s per GPU."""
    rows = []
    for c in f.get("curves") or []:
        for p in c.get("points") or []:
            if not all_points and not p.get("on_frontier"):
                continue
            att = p.get("slo_attainment")
            gp = (p.get("goodput") or {}).get("req_s")
            rows.append(
                (
                    point_mark(p),
                    inert(str(c.get("label", ""))),
                    _load(p),
                    _num(p.get("tok_s_per_gpu")),
                    _num(p.get("decode_tok_s_per_user")),
                    _num(gp if gp is not None else p.get("req_s"), 2),
                    "—" if att is None else f"{att * 100:.0f} %",
                )
            )
    return sorted(rows, key=lambda r: float(r[3]) if r[3] != "—" else 0.0)


HEADER = ("", "launch config", "load", "tok/s/GPU", "decode/user", "served/s", "in SLO")


def frontier_lines(
    f: dict[str, Any], *, all_points: bool = False, answer: bool = True, caption: bool = True
) -> list[str]:
    """The frontier's heading (host, SLO), (``caption``) what its y axis is and where the SLO's line
    sits, its table and (``answer``) the answer under the SLO."""
    slo = f.get("slo_text") or "no [slo] in the profile"
    misses = "; x: misses it" if f.get("slo") else ""
    out = [f"frontier on {inert(str(f.get('target') or 'this host'))} ({inert(slo)}{misses}):"]
    if caption:
        out += axis_caption(f)
    rows = frontier_rows(f, all_points=all_points)
    if not rows:
        points = [p for c in f.get("curves") or [] for p in c.get("points") or []]
        if points and all(p.get("decode_tok_s_per_user") is None for p in points):
            out.append(f"  {len(points)} point(s), none with a decode speed (no run kept per-request TPOT)")
        else:
            out.append("  no point meets the SLO" if f.get("slo") else "  nothing measured")
    else:
        widths = [max(len(r[i]) for r in (HEADER, *rows)) for i in range(len(HEADER))]
        for r in (HEADER, *rows):
            cells = (v.rjust(w) if i > 1 else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True)))
            out.append(("  " + "  ".join(cells)).rstrip())
    out += legend_lines(f, all_points=all_points)
    if answer and f.get("answer"):
        out.append(f"  {inert(str(f['answer']))}")
    return out


def legend_lines(f: dict[str, Any], *, all_points: bool = False) -> list[str]:
    """``  #3: enable-flashinfer-allreduce-fusion=on NCCL_ALGO=Ring``: what sets apart curves of the same
    speculation, whose labels name only their first launch (the rows stay within 80 columns); the
    curves with a row in the table (:func:`frontier_rows`' choice) only."""
    out = []
    for c in f.get("curves") or []:
        if not all_points and not any(p.get("on_frontier") for p in c.get("points") or []):
            continue
        label, differs = str(c.get("label", "")), c.get("differs")
        if differs and label.endswith(")") and "(#" in label:
            out.append(inert(f"  {label[label.rindex('(#') + 1 : -1]}: {differs}"))
    return out


def axis_caption(f: dict[str, Any]) -> list[str]:
    """``  y: decode tok/s per user (1000 ÷ itl p99); SLO line at 20.0: itl p99 ≤ 50 ms (under it decode
    misses it); ttft p99 ≤ 2 s: grey x only (no line on this axis)`` — [] for a report written before
    the decode axis (its ``y_axis`` absent)."""
    y = f.get("y_axis")
    if not isinstance(y, dict) or not isinstance(y.get("name"), str):
        return []
    line = y.get("slo_line")
    at = f" at {line:.1f}" if isinstance(line, int | float) and not isinstance(line, bool) else ""
    said = str(f.get("slo_caption") or "").replace("SLO line:", f"SLO line{at}:", 1)
    return [inert(f"  y: {y['name']}" + (f"; {said}" if said else ""))]


def _load(p: dict[str, Any]) -> str:
    """``8``: a closed loop at concurrency 8; ``4.2/s≤64``: Poisson arrivals at 4.2 req/s, ≤ 64 in flight."""
    rate = p.get("request_rate")
    conc = str(p.get("concurrency", ""))
    return f"{rate_text(rate)}/s≤{conc}" if isinstance(rate, int | float) and not isinstance(rate, bool) else conc
