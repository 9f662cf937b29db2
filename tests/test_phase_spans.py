"""A phase's duration never exceeds the span its start and end show (issue 34).

vLLM's KV phase once read 162 s over a one-second span: its clock was started where the weights
finished loading, though torch.compile and the profiling run came between, while its start text stayed
its own first line's. Over every real fixture (SGLang and vLLM), every finished phase's seconds fit
between the start and end times the summary shows (within the stamps' resolution), except a phase only
a progress bar saw (the bar's own clock, whose lines carry no time).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from eagletui.commands.parse import parse_path
from eagletui.core.logs.formats.vllm import VLLM

FIX = Path(__file__).parent / "fixtures"
LOGS = [(p, None) for p in sorted((FIX / "real").glob("*.log"))] + [(p, VLLM) for p in sorted((FIX / "vllm").glob("*.log"))]

_TS = re.compile(r"(?:(?:(\d{4})-)?(\d{2})-(\d{2})[ T])?(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?")


def _seconds(text: str) -> float | None:
    m = _TS.search(text or "")
    if m is None:
        return None
    y, mo, d, h, mi, s, frac = m.groups()
    t = datetime(int(y or 2000), int(mo or 1), int(d or 1), int(h), int(mi), int(s))
    return t.timestamp() + (float("0." + frac) if frac else 0.0)


@pytest.mark.slow
def test_no_phase_lasts_longer_than_its_span() -> None:
    wrong = []
    for path, fmt in LOGS:
        for p in parse_path(str(path), fmt=fmt)["phases"]:
            a, b, secs = _seconds(p.get("start")), _seconds(p.get("end")), p.get("seconds")
            if a is None or b is None or secs is None or p.get("source") != "log" or b < a:
                continue
            if p.get("total") and a == b:
                continue  # a bar's own clock (its frames carry no time of day)
            if secs > (b - a) + 1.0:
                wrong.append(f"{path.parent.name}/{path.name}: {p['name']} {secs} s over {p['start']} → {p['end']}")
    assert not wrong, "\n".join(wrong)


def test_vllm_kv_phase_starts_after_compile() -> None:
    """vLLM 0.25.1 (DGX Spark, public log): KV sizing follows torch.compile; its clock starts there."""
    s = parse_path(str(FIX / "vllm" / "ready-0251-mtp-qwen38-dgxspark.log"), fmt=VLLM)
    kv = next(p for p in s["phases"] if p["name"] == "kv_cache")
    compile_ = next(p for p in s["phases"] if p["name"] == "compile")
    assert kv["start"] == compile_["end"] == "08-21 10:29:03"
    assert kv["seconds"] == 9.0  # not 96 s from the drafter's load end
