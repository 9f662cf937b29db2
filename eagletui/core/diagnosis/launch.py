"""Where a launch's minutes went: the weight load against the storage, the tail after the last shard, the
page cache, and the CUDA-graph capture against the batches the server then ran.

Inputs (:class:`~eagletui.core.diagnosis.fold.LaunchObs`): the shard bar's count and elapsed time (``load``
``bar`` notes), the loader the bar names and the launch configured (``load`` ``loader``/``config``/
``fallback``), ``Load weight end``'s own elapsed (``load`` ``end``), the phases' durations, the
capture sizes (``capture`` ``sizes``/``config``), the decode lines' running batch sizes and ``cuda graph``
flag, and the preflight's host facts (``checkpoint``: bytes and page-cache share from the safetensors
index; ``storage``: a bounded read probe).

* **read rate** = checkpoint bytes ÷ the shard bar's elapsed time (every rank reads the whole checkpoint
  through one page cache, so the host reads it once);
* **loader-bound** when that rate is below half of what the probe read from the same storage;
  **storage-bound** when it is above 70 % of it;
* **tail** = ``Load weight end``'s elapsed − the shard bar's elapsed at 100 % (post-processing, tensor
  mapping and host-to-device copies after the last shard);
* a decode line with ``cuda graph: False`` at a running batch above the largest captured size ran eagerly.
"""

from __future__ import annotations

import math
from typing import Any

from eagletui.core.diagnosis.fold import Diagnosis, LaunchObs, as_dict, fmt_bytes, fmt_s
from eagletui.core.host.page_cache import COLD, WARM, cache_state, cached_share
from eagletui.core.servers.flags import parse_version

#: A load is worth a hint only when it is long enough to matter.
SLOW_LOAD_S = 30.0
LOADER_BOUND = 0.5
STORAGE_BOUND = 0.7


def launch_diagnoses(o: LaunchObs, fmt: Any) -> list[Diagnosis]:
    out: list[Diagnosis] = []
    load = _load(o)
    if load is not None and (_long(load) or o.host.get("checkpoint")):
        out.extend(_weight_load(o, fmt, load))
    out.extend(_page_cache(o))
    out.extend(_capture(o, fmt))
    return out


# ------------------------------------------------------------------------------------- weights


def _load(o: LaunchObs) -> dict[str, Any] | None:
    """The target's load: shards, the bar's elapsed at 100 %, Load weight end's elapsed, the loader."""
    bars = [n.value for n in o.note_list("load", "bar") if isinstance(n.value, dict)]
    target = [b for b in bars if b.get("phase") == "load_target"]
    final = [b for b in target if b.get("total") and b.get("done") == b.get("total")]
    phase = o.phases.get("load_target")
    if not final and (phase is None or phase.seconds is None):
        return None
    bar_s = final[-1].get("elapsed") if final else None
    shards = final[-1].get("total") if final else (phase.total if phase else None)
    ends = [
        n.value for n in o.note_list("load", "end") if isinstance(n.value, dict) and not n.value.get("draft")
    ]
    end_s = ends[0].get("elapsed") if ends else None
    if not isinstance(end_s, int | float):
        end_s = phase.seconds if phase is not None else None
    loader = o.note("load", "loader")
    cfg = o.note("load", "config")
    conf = cfg.value if cfg is not None and isinstance(cfg.value, dict) else {}
    mode = loader.value.get("mode") if loader is not None and isinstance(loader.value, dict) else None
    fallback = o.note("load", "fallback") is not None
    ver = parse_version(o.version)
    if mode is None and conf:
        if conf.get("multithread") is False:
            mode = "single"
        elif (
            conf.get("prefetch")
            and not conf.get("threads")
            and conf.get("multithread") is None
            and ver
            and ver >= (0, 5, 16)
        ):
            mode, fallback = "single", True
    threads = conf.get("threads") if isinstance(conf.get("threads"), int) else None
    if mode == "multithread" and threads is None:
        threads = 8  # DEFAULT_NUM_THREADS in every version checked (0.5.13 … 0.5.23)
    return {
        "bar_s": float(bar_s) if isinstance(bar_s, int | float) else None,
        "shards": shards if isinstance(shards, int) and shards > 0 else None,
        "end_s": float(end_s) if isinstance(end_s, int | float) else None,
        "mode": mode,
        "threads": 1 if mode == "single" else threads,
        "fallback": fallback,
        "prefetch": bool(conf.get("prefetch")),
        "desc": loader.value.get("desc", "") if loader is not None and isinstance(loader.value, dict) else "",
    }


def _long(ld: dict[str, Any]) -> bool:
    """A load worth a line without host facts: a few seconds at least."""
    s = ld["bar_s"] if ld["bar_s"] is not None else ld["end_s"]
    return s is not None and s >= 5.0


def _weight_load(o: LaunchObs, fmt: Any, ld: dict[str, Any]) -> list[Diagnosis]:
    out: list[Diagnosis] = []
    bar_s, shards, end_s = ld["bar_s"], ld["shards"], ld["end_s"]
    load_s = bar_s if bar_s is not None else end_s
    ckpt = as_dict(o.host.get("checkpoint"))
    storage = as_dict(o.host.get("storage"))
    nbytes = (
        ckpt.get("bytes") if isinstance(ckpt.get("bytes"), int | float) and ckpt.get("bytes", 0) > 0 else None
    )
    rate = nbytes / load_s if nbytes and load_s and load_s > 0.05 else None
    probe = (
        storage.get("mbps")
        if isinstance(storage.get("mbps"), int | float) and storage.get("mbps", 0) > 0
        else None
    )
    probe_cached = bool(storage.get("cached"))
    network = bool(storage.get("network") or ckpt.get("network"))
    mode, threads = ld["mode"], ld["threads"]
    text = _load_words(shards, load_s, nbytes, rate, mode, threads)
    ev = []
    if bar_s is not None and shards:
        ev.append(f"shard bar {shards}/{shards} [{fmt_s(bar_s)}] (log)")
    elif end_s is not None:
        ev.append(f"load_target {fmt_s(end_s)} (log)")
    if ld["desc"]:
        ev.append(f"bar '{ld['desc']}'")
    if nbytes:
        ev.append(f"checkpoint index {fmt_bytes(nbytes)} (preflight)")
    bound = None
    if rate is not None and probe is not None and not probe_cached:
        ratio = rate / (probe * 1e6)
        ev.append(f"read probe {fmt_bytes(probe * 1e6)}/s (preflight)")
        if ratio < LOADER_BOUND:
            bound = "loader"
            text += f": {ratio * 100:.0f} % of what the storage gives, loader-bound"
        elif ratio >= STORAGE_BOUND:
            bound = "storage"
            text += f": {min(ratio, 9.99) * 100:.0f} % of what the storage gives, storage-bound"
    elif rate is not None and probe is not None and probe_cached:
        ev.append("read probe hit the page cache (preflight): no storage rate")
    hint, level = _load_hint(o, fmt, ld, bound, load_s, network)
    if ld["fallback"]:
        text += " (checkpoint prefetch forced one thread)"
    out.append(
        Diagnosis(
            kind="weight_load",
            text=text,
            evidence="; ".join(ev),
            hint=hint,
            source="preflight" if nbytes else "log",
            level=level,
            data={
                "shards": shards,
                "seconds": load_s,
                "bytes": nbytes,
                "read_bps": rate,
                "probe_bps": probe * 1e6 if probe else None,
                "bound": bound,
                "loader": mode,
                "threads": threads,
            },
        )
    )
    tail = _load_tail(bar_s, end_s)
    if tail is not None:
        out.append(tail)
    return out


def _load_words(
    shards: int | None,
    load_s: float | None,
    nbytes: float | None,
    rate: float | None,
    mode: str | None,
    threads: int | None,
) -> str:
    """``target weights: 8 shards in 1 min (…per shard), 140 GB at 2 GB/s, one loader thread``."""
    who = {"single": "one loader thread", "multithread": f"{threads or '?'} loader threads"}.get(
        mode or "", ""
    )
    parts = []
    if shards and load_s is not None:
        parts.append(
            f"{shards} shard{'s' if shards != 1 else ''} in {fmt_s(load_s)} ({fmt_s(load_s / shards)} per shard)"
        )
    elif load_s is not None:
        parts.append(f"weights in {fmt_s(load_s)}")
    if rate is not None:
        parts.append(f"{fmt_bytes(nbytes)} at {fmt_bytes(rate)}/s")
    if who:
        parts.append(who)
    return "target weights: " + ", ".join(parts) if parts else "target weights loaded"


def _load_hint(
    o: LaunchObs, fmt: Any, ld: dict[str, Any], bound: str | None, load_s: float | None, network: bool
) -> tuple[str, str]:
    """(hint, level) for the load: the loader's threads or prefetch, or the storage, by what bound it."""
    mode, threads = ld["mode"], ld["threads"]
    hint, level = "", "info"
    slow = load_s is not None and load_s >= SLOW_LOAD_S
    if ld["fallback"]:
        hint = fmt.advice("loader_prefetch", o.version, {"threads": 16, "network": network})
        level = "warn" if slow else "info"
    elif mode == "single" and bound != "storage":
        hint = fmt.advice("loader_threads", o.version, {"threads": 16, "network": network})
        level = "warn" if slow else "info"
    elif bound == "loader":
        hint = fmt.advice(
            "loader_threads", o.version, {"threads": min(64, 2 * (threads or 8)), "network": network}
        )
        level = "warn" if slow else "info"
    elif bound == "storage" and slow:
        hint = "the storage is the limit: a local NVMe copy of the checkpoint, or a warm page cache"
    return hint, level


def _load_tail(bar_s: float | None, end_s: float | None) -> Diagnosis | None:
    """The time from the shard bar's 100 % to ``Load weight end``, when it is long enough to say."""
    if bar_s is not None and end_s is not None and end_s > bar_s:
        tail = end_s - bar_s
        if tail >= max(3.0, 0.05 * end_s):
            return Diagnosis(
                kind="load_tail",
                text=(
                    f"after the last shard, {fmt_s(tail)} more until Load weight end ({tail / end_s * 100:.0f} % "
                    "of the load): post-processing, tensor mapping and host-to-device copies"
                ),
                evidence=f"shard bar 100 % at {fmt_s(bar_s)}; Load weight end. elapsed={end_s:.2f} s (log)",
                level="warn" if tail >= 60 and tail >= 0.25 * end_s else "info",
                data={"shards_s": bar_s, "tail_s": tail, "load_s": end_s},
            )
    return None


def _page_cache(o: LaunchObs) -> list[Diagnosis]:
    ckpt = as_dict(o.host.get("checkpoint"))
    frac, state = cached_share(ckpt), cache_state(ckpt)
    if frac is None or not ckpt.get("bytes"):
        return []
    nbytes = ckpt["bytes"]
    sampled = ckpt.get("sampled_bytes")
    how = f"mincore over {fmt_bytes(sampled)}" if isinstance(sampled, int | float) and sampled else "mincore"
    if state == WARM:
        return [
            Diagnosis(
                kind="page_cache",
                text=(
                    f"warm start: {frac * 100:.0f} % of the {fmt_bytes(nbytes)} checkpoint was in the page cache "
                    "before the launch, so this load read from memory; a cold start (another host, after a "
                    "reboot) reads it from storage"
                ),
                evidence=f"page cache share {frac:.2f} ({how}, preflight)",
                source="preflight",
                data={"cached": frac, "bytes": nbytes},
            )
        ]
    if state == COLD:
        return [
            Diagnosis(
                kind="page_cache",
                text=f"cold start: {frac * 100:.0f} % of the {fmt_bytes(nbytes)} checkpoint was in the page cache; "
                "the load read it from storage (a relaunch on this host may find it cached)",
                evidence=f"page cache share {frac:.2f} ({how}, preflight)",
                source="preflight",
                data={"cached": frac, "bytes": nbytes},
            )
        ]
    return [
        Diagnosis(
            kind="page_cache",
            text=f"part-warm start: {frac * 100:.0f} % of the {fmt_bytes(nbytes)} checkpoint was in the page cache",
            evidence=f"page cache share {frac:.2f} ({how}, preflight)",
            source="preflight",
            data={"cached": frac, "bytes": nbytes},
        )
    ]


# ------------------------------------------------------------------------------------- capture


def _sizes(o: LaunchObs) -> tuple[list[int], list[int]]:
    """(the target's decode/verify graph sizes, the draft's) from the capture lines, else the config."""
    target: list[int] = []
    draft: list[int] = []
    for n in o.note_list("capture", "sizes"):
        v = n.value
        if not isinstance(v, dict) or not isinstance(v.get("bs"), list):
            continue
        bs = [b for b in v["bs"] if isinstance(b, int) and b > 0]
        if v.get("draft"):
            draft = sorted(set(draft) | set(bs))
        elif v.get("what") in ("decode", "verify", ""):
            target = sorted(set(target) | set(bs))
    if not target:
        cfg = o.note("capture", "config")
        if cfg is not None and isinstance(cfg.value, dict):
            if isinstance(cfg.value.get("bs"), list) and cfg.value["bs"]:
                target = sorted(b for b in cfg.value["bs"] if isinstance(b, int) and b > 0)
    return target, draft


def _max_bs(o: LaunchObs, target: list[int]) -> int | None:
    if target:
        return max(target)
    cfg = o.note("capture", "config")
    if cfg is not None and isinstance(cfg.value, dict) and isinstance(cfg.value.get("max_bs"), int):
        return int(cfg.value["max_bs"])
    return None


def _round_up(n: int) -> int:
    """The capture size a tuner would pick to cover ``n``: a multiple of 8 (16 and below: a power of 2)."""
    if n <= 16:
        p = 1
        while p < n:
            p *= 2
        return p
    return int(math.ceil(n / 8.0) * 8)


def _capture(o: LaunchObs, fmt: Any) -> list[Diagnosis]:
    out: list[Diagnosis] = []
    target, draft = _sizes(o)
    largest = _max_bs(o, target)
    cap = o.phases.get("capture_target")
    per_size = None
    if cap is not None and cap.seconds is not None and target:
        per_size = cap.seconds / len(target)
        out.append(_capture_time(o, target, draft, cap.seconds, per_size))
    eager_running = dict(o.eager_running)
    if not eager_running:  # a report without the stats lines: the notes say which batch sizes ran eager
        for n in o.note_list("capture", "eager"):
            r = n.value.get("running") if isinstance(n.value, dict) else None
            if isinstance(r, int) and r > 0:
                eager_running[r] = 0
    out.extend(_eager(o, fmt, largest, per_size, eager_running))
    if (
        not o.eager_lines
        and not eager_running
        and largest is not None
        and largest >= 32
        and o.decode_lines >= 20
        and 0 < o.max_running <= largest // 4
        and per_size is not None
        and target
    ):
        want = _round_up(o.max_running)
        saved = len([b for b in target if b > want]) * per_size
        if saved >= 5:
            out.append(
                Diagnosis(
                    kind="cuda_graph_unused",
                    text=(
                        f"graphs captured up to bs {largest}, but decode never ran above {o.max_running}: capturing up to "
                        f"{want} would save ≈ {fmt_s(saved)} per launch"
                    ),
                    evidence=f"largest #running-req {o.max_running} in {o.decode_lines} Decode lines (log)",
                    hint=fmt.advice("capture_sizes", o.version, {"want": want}),
                    data={"largest": largest, "max_running": o.max_running, "saved_s": saved},
                )
            )
    return out


def _capture_time(
    o: LaunchObs, target: list[int], draft: list[int], seconds: float, per_size: float
) -> Diagnosis:
    """How long the target's graphs took, per size, beside the draft's and the prefill graphs'."""
    text = f"CUDA graphs: target {len(target)} sizes (bs {target[0]}–{target[-1]}) in {fmt_s(seconds)}, {fmt_s(per_size)} per size"
    capd = o.phases.get("capture_draft")
    if capd is not None and capd.seconds is not None:
        text += f"; draft in {fmt_s(capd.seconds)}"
    pre = o.phases.get("capture_prefill")
    if pre is not None and pre.seconds is not None and pre.seconds >= 1:
        text += f"; prefill graphs {fmt_s(pre.seconds)}"
    return Diagnosis(
        kind="cuda_graph_capture",
        text=text,
        evidence=f"Capture … CUDA graph begin … bs=[…] and its end line (log): {len(target)} sizes",
        data={"sizes": target, "seconds": seconds, "per_size_s": per_size, "draft_sizes": draft},
    )


def _eager(
    o: LaunchObs, fmt: Any, largest: int | None, per_size: float | None, eager_running: dict[int, int]
) -> list[Diagnosis]:
    """Decode steps without a CUDA graph: above the largest captured size (a size to add), or all of
    them because the launch disabled the graphs."""
    cfg = o.note("capture", "config")
    disabled = bool(cfg is not None and isinstance(cfg.value, dict) and cfg.value.get("disabled"))
    if eager_running and largest is not None:
        above = {bs: n for bs, n in eager_running.items() if bs > largest}
        if above:
            lo, hi = min(above), max(above)
            n_above = sum(above.values())
            lines = f"{n_above} of {o.decode_lines} decode lines" if n_above else "decode steps"
            want = _round_up(hi)
            extra = ""
            if per_size is not None:
                more = (
                    max(1, math.ceil((want - largest) / 8.0))
                    if want > 16
                    else max(1, want.bit_length() - largest.bit_length())
                )
                extra = f"; about {more} more sizes, ≈ {fmt_s(more * per_size)} more capture per launch"
            span = f"{lo}" if lo == hi else f"{lo}–{hi}"
            return [
                Diagnosis(
                    kind="cuda_graph_eager",
                    text=(
                        f"{lines} ran without a CUDA graph at running batch {span}, "
                        f"above the largest captured size {largest}: those steps are eager (slower)"
                    ),
                    evidence=f"'cuda graph: False' in {n_above or 'the'} Decode lines with #running-req {span} (log)",
                    hint=fmt.advice("capture_sizes", o.version, {"want": want}) + extra,
                    level="warn",
                    data={"largest": largest, "eager_lines": n_above, "running": sorted(above), "want": want},
                )
            ]
    elif (o.eager_lines or eager_running) and disabled:
        return [
            Diagnosis(
                kind="cuda_graph_eager",
                text="decode ran without CUDA graphs: the launch disabled them",
                evidence="'cuda graph: False' in Decode lines; graphs disabled in the launch's args (log)",
                level="info",
                data={"eager_lines": o.eager_lines},
            )
        ]
    return []
