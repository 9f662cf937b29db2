"""Moved to :mod:`eagletui.core.stats` (the run book in ``core`` needs it, and ``core`` imports nothing
from ``bench``); kept so ``from eagletui.bench.stats import ...`` still works."""

from eagletui.core.stats import mean_stdev, percentile, stat, summarize

__all__ = ["mean_stdev", "percentile", "stat", "summarize"]
