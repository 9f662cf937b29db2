"""SGLang's record prefix ``[date time ranks]``: the pattern, the TP rank, the timestamp in seconds."""

from __future__ import annotations

import re

# sglang's own prefix, optionally preceded by a Ray actor tag; searched anywhere in the line because
# docker-compose, journald or a Python logging handler may have written their own prefix in front.
# The date is ``YYYY-MM-DD`` (srt, 0.4.0+), ``MM-DD`` (the multimodal_gen diffusion runtime) or absent
# (0.3.x).
PREFIX_RE = re.compile(
    r"(?:\((?P<actor>\w+) pid=(?P<pid>\d+)(?:,\s*ip=[\d.]+)?\)\s*)?"
    r"\[(?P<date>(?:\d{4}-)?\d{2}-\d{2} )?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3}))?"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)

#: The record start alone (no Ray actor in front): where the outer prefix of a wrapped file ends. The
#: ranks (``own``) are what no wrapper's copy of the time carries: such a start is the server's own.
RECORD_START_RE = re.compile(
    r"\[(?:(?:\d{4}-)?\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{3})?(?P<own>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\]"
)


_TP_CACHE: dict[str, int | None] = {}


def tp_of(ranks: str) -> int | None:
    """TP rank in a prefix's stripped rank text (``"DP0 TP3"`` → 3), else None."""
    tp = _TP_CACHE.get(ranks, -1)
    if tp != -1:
        return tp
    tp = None
    i = ranks.find("TP")
    if i >= 0:
        j = i + 2
        while j < len(ranks) and ranks[j].isdigit():
            j += 1
        tp = int(ranks[i + 2 : j])
    if len(_TP_CACHE) < 4096:
        _TP_CACHE[ranks] = tp
    return tp


_DATE_CACHE: dict[str, int] = {}
# The minute of the last dated timestamp: (``"YYYY-MM-DD HH:MM"``, days × 86400.0, HH × 3600 + MM × 60).
_MINUTE: tuple[str | None, float, int] = (None, 0.0, 0)


def ts_seconds(ts_text: str) -> float | None:
    """Seconds for a prefix timestamp: days since 0001-01-01 × 86400 + time of day (+ ms).

    Time-only prefixes (0.3.x) give the time of day; callers handle the midnight wrap.
    """
    global _MINUTE
    key, day_s, hm = _MINUTE
    n = len(ts_text)
    if ts_text[:17] == key and (n == 19 or (n == 23 and ts_text[19] == ".")):
        # Same minute as last time: the same arithmetic as below, without re-reading date and hour.
        try:
            secs: float = hm + int(ts_text[17:19])
            if n == 23:
                secs += int(ts_text[20:23]) / 1000.0
        except ValueError:
            return None
        return day_s + secs
    try:
        if len(ts_text) >= 19 and ts_text[4] == "-":
            date = ts_text[:10]
            day = _DATE_CACHE.get(date)
            if day is None:
                import datetime as _dt

                day = _dt.date(int(date[:4]), int(date[5:7]), int(date[8:10])).toordinal()
                if len(_DATE_CACHE) < 4096:
                    _DATE_CACHE[date] = day
            t = ts_text[11:]
        elif len(ts_text) >= 14 and ts_text[2] == "-":  # MM-DD (no year): a leap year, so 02-29 exists
            date = ts_text[:5]
            day = _DATE_CACHE.get(date)
            if day is None:
                import datetime as _dt

                day = _dt.date(2000, int(date[:2]), int(date[3:5])).toordinal()
                if len(_DATE_CACHE) < 4096:
                    _DATE_CACHE[date] = day
            t = ts_text[6:]
        else:
            day = 0
            t = ts_text
        hm = int(t[0:2]) * 3600 + int(t[3:5]) * 60
        secs = float(hm + int(t[6:8]))
        if len(t) > 9 and t[8] == ".":
            secs += int(t[9:12]) / 1000.0
        if day and (n == 19 or n == 23):
            _MINUTE = (ts_text[:17], day * 86400.0, hm)
        return day * 86400.0 + secs
    except (ValueError, IndexError):
        return None
