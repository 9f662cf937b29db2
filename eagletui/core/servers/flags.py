"""Server flags whose spelling depends on the SGLang version, so a relaunch is not wasted on argparse.

A wrong flag costs a full relaunch cycle only to die in argparse; checking the profile against the host's
sglang version first turns that into an inline refusal. For 0.5.13 and later the versions are the first
release whose real parser shows the change (every release's table ships in ``eagletui/data/sglang-flags``;
``tests/test_flagtables.py`` holds these notes to them); older ones come from the sampled wheels. Which
names a parser accepts is decided by :mod:`eagletui.core.servers.flag_rule` (argparse's prefix rule) over the
release's own table; these notes add *when* and *what instead*, and speak alone only when no table of the
server's release is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class FlagChange:
    flag: str
    since: tuple[int, ...]
    kind: str  # "removed" (argparse rejects it) or "deprecated" (accepted, warns)
    use: str  # what to use instead


CHANGES: tuple[FlagChange, ...] = (
    FlagChange("--cuda-graph-max-bs", (0, 5, 20), "removed", "--cuda-graph-max-bs-decode"),
    FlagChange("--cuda-graph-max-bs", (0, 5, 14), "deprecated", "--cuda-graph-max-bs-decode"),
    FlagChange(
        "--enable-flashinfer-allreduce-fusion",
        (0, 5, 14),
        "deprecated",
        "--flashinfer-allreduce-fusion-backend",
    ),
    FlagChange("--disable-cuda-graph", (0, 5, 14), "deprecated", "--cuda-graph-backend-decode=disabled"),
    FlagChange("--stream-output", (0, 5, 20), "removed", "--incremental-streaming-output"),
    FlagChange("--stream-output", (0, 5, 10), "deprecated", "--incremental-streaming-output"),
    # From 0.5.20 the parser has only the per-phase spellings: the old ones are ambiguous prefixes there.
    FlagChange("--cuda-graph-bs", (0, 5, 20), "removed", "--cuda-graph-bs-decode"),
    FlagChange("--cuda-graph-bs", (0, 5, 14), "deprecated", "--cuda-graph-bs-decode"),
    FlagChange("--enable-dp-attention", (0, 5, 22), "deprecated", "--attn-dp-size <dp-size>"),
)

#: Flags that only exist from a version on: using them on an older server fails in argparse.
ADDED: dict[str, tuple[int, ...]] = {
    "--cuda-graph-max-bs-decode": (0, 5, 14),
    "--cuda-graph-max-bs-prefill": (0, 5, 14),
    "--cuda-graph-backend-decode": (0, 5, 14),
    "--cuda-graph-backend-prefill": (0, 5, 14),
    "--flashinfer-allreduce-fusion-backend": (0, 5, 14),
    "--enable-flashinfer-allreduce-fusion": (0, 4, 10),
    "--speculative-algorithm": (0, 4, 6),
}


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``0.5.23``, ``0.5.5.post1``, ``sglang 0.4.10rc1`` → a comparable tuple; None when absent."""
    if not text:
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def fmt(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def check_flags(flags: list[str], version: str | None) -> tuple[list[str], list[str]]:
    """(errors, warnings) for these flags on this sglang version; nothing when the version is unknown."""
    v = parse_version(version)
    if v is None:
        return [], []
    errors: list[str] = []
    warnings: list[str] = []
    for flag in flags:
        removed = next((c for c in CHANGES if c.flag == flag and c.kind == "removed" and v >= c.since), None)
        if removed is not None:
            errors.append(
                f"{flag} was removed in sglang {fmt(removed.since)} (host has {fmt(v)}): use {removed.use}"
            )
            continue
        added = ADDED.get(flag)
        if added is not None and v < added:
            errors.append(f"{flag} does not exist before sglang {fmt(added)} (host has {fmt(v)})")
            continue
        dep = next((c for c in CHANGES if c.flag == flag and c.kind == "deprecated" and v >= c.since), None)
        if dep is not None:
            warnings.append(f"{flag} is deprecated since sglang {fmt(dep.since)}: prefer {dep.use}")
    return errors, warnings


#: The server flags people tune between runs, spelled as in profiles: each gets a column in the
#: exports, and all but the memory fraction key the phase-duration history (they change how long
#: loading and CUDA graph capture take; see :data:`eagletui.core.phases.history.TIMING_FLAGS`).
KEY_FLAGS: tuple[str, ...] = (
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--cuda-graph-max-bs",
    "--disable-cuda-graph",
    "--mem-fraction-static",
)
