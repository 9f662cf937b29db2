"""GPU step profiles: read torch-profiler Chrome traces (what SGLang's ``/start_profile`` writes) and say
where a decode step's time goes (communication, gemm, attention, moe, other), per rank and per step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from eagletui.profiler.chrome import ChromeTrace
from eagletui.profiler.rank import RankSummary
from eagletui.profiler.summary import RankFold, rank_from


def summarize_file(path: str | Path, progress: Callable[[int], None] | None = None) -> RankSummary:
    """Stream one trace file (plain or gzip) into its kernel breakdown; raises :class:`TraceError`.
    ``progress(bytes read)`` is called as a long file is read."""
    trace = ChromeTrace(path, progress=progress)
    fold = RankFold(str(path))
    for ev in trace.events():
        fold.add(ev)
    fold.rank = rank_from(Path(path).name, trace.meta)
    fold.skipped += trace.skipped_deep
    return fold.result()


