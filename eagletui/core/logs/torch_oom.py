"""torch's own out-of-memory message, read for the one case no memory setting can fix.

``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity
of 139.80 GiB of which 132.84 GiB is free.`` (torch 2.11's wording, /work/shared/fixtures/gpu/
torch-cuda-oom.txt). When the one allocation is larger than the whole device, lowering
``--mem-fraction-static`` (or vLLM's ``--gpu-memory-utilization``) cannot help: something asked for far
too much, and the hint must say so rather than send the user round the memory knobs.
"""

from __future__ import annotations

import re

#: The device running out of memory, in the wordings torch and the CUDA runtime and driver print; shared by
#: SGLang's and vLLM's failure tables, ``(substring, kind, priority, tag)`` like their rows. The driver's
#: ``RuntimeError: CUDA driver error: out of memory`` comes from a ``cuMem*`` call outside torch's allocator
#: (vLLM's GPTQ-Marlin repack at load, noonghunna/club-3090#60), so it names no sizes.
OOM_RULES: tuple[tuple[str, str, int, str], ...] = (
    ("CUDA out of memory", "oom", 90, "cuda_oom"),
    ("OutOfMemoryError", "oom", 90, "cuda_oom"),
    ("CUDA error: out of memory", "oom", 90, "cuda_oom"),
    ("CUDA driver error: out of memory", "oom", 90, "cuda_oom"),
)

_SIZE = r"([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB)"
_TORCH_OOM_RE = re.compile(
    rf"Tried to allocate {_SIZE}\.\s*GPU\s+(\d+) has a total capacity of {_SIZE}", re.IGNORECASE
)
_UNIT = {"b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def oversized_allocation(text: str) -> str | None:
    """The hint for one allocation larger than the GPU's total memory, or None (it would fit on an
    empty device, so the usual memory advice applies)."""
    m = _TORCH_OOM_RE.search(text[:20000])
    if m is None:
        return None
    want = float(m.group(1)) * _UNIT[m.group(2).lower()]
    total = float(m.group(4)) * _UNIT[m.group(5).lower()]
    if want <= total:
        return None
    return (
        f"one allocation of {m.group(1)} {m.group(2)} is larger than GPU {m.group(3)}'s whole memory "
        f"({m.group(4)} {m.group(5)}): no memory fraction can make it fit. Something asked for far too "
        "much (a batch, context or vocabulary size, or a wrong dtype): read the frame above the error."
    )
