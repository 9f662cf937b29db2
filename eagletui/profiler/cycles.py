"""What each GPU range of a decode trace is, and how the ranges make speculative decode cycles.

SGLang names its ranges with ``torch.profiler.record_function`` (torch writes each one twice: a CPU
``user_annotation`` and the GPU-side ``gpu_user_annotation`` spanning the kernels it launched):

* ``ModelRunner.forward`` → ``step[MODE bs=N]`` (``utils/profile_utils.build_step_span_name``), with
  ``toks=T`` for an EXTEND. 0.5.17 writes the forward mode's name (``EXTEND``, ``DECODE``,
  ``TARGET_VERIFY``, ``DRAFT_EXTEND_V2``, ``MIXED``, ``IDLE``); 0.5.23 writes ``VERIFY`` for the target's
  verify and ``DRAFT`` for every forward of the draft model, and may append detailed annotations
  (``step[DECODE bs=8 g_sq=8 … forward_id=3]``).
* the EAGLE worker (``speculative/eagle_worker_v2.py``, ``spec_stage_span``) wraps the draft model's
  multi-step drafting in ``draft`` and its extend after verify (or after a prefill) in ``draft_extend``.
* the scheduler wraps a batch in ``scheduler.run_batch`` and its bookkeeping in other ``scheduler.*``
  ranges and ``copy_result_to_cpu``: not stages.

One decode batch of a speculative server is one **cycle**: ``draft`` → ``step[TARGET_VERIFY|VERIFY]`` →
``draft_extend``. A prefill batch is ``step[EXTEND …]`` followed by its own ``draft_extend`` (the draft
model's prefill, with the draft forward nested inside it); it is not a decode cycle. A server without
speculation has one ``step[DECODE …]`` per decode batch. Under CUDA graphs the forwards inside a graph
replay write no nested ``step[…]``; eagerly they do (``step[DECODE]`` / ``step[DRAFT]`` inside ``draft``),
which is why only the outermost stage ranges are parts.

Pure functions over ``(start_us, end_us, name)`` tuples; the fold that owns the kernels lives in
:mod:`eagletui.profiler.summary`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

#: The parts of a decode cycle, in the order they run.
SPEC_PARTS = ("draft", "verify", "draft_extend")

_STEP = re.compile(r"^\s*step\[\s*([A-Za-z_0-9]+)")
_BS = re.compile(r"\bbs=(\d+)")
# Names of ranges that are not SGLang's (a hand-made ``record_function("decode_step_3")``): the words
# they use for what they wrap.
_GENERIC = re.compile(r"step|forward|decode|extend|verify|prefill", re.IGNORECASE)

_MODES = {
    "TARGET_VERIFY": "verify",
    "VERIFY": "verify",
    "DRAFT": "draft_step",  # 0.5.23: any forward of the draft model (nested in draft / draft_extend)
    "DRAFT_EXTEND": "draft_extend",
    "DRAFT_EXTEND_V2": "draft_extend",
    "DECODE": "decode",
    "EXTEND": "prefill",
    "MIXED": "prefill",
    "SPLIT_PREFILL": "prefill",
    "DLLM_EXTEND": "prefill",
    "PREBUILT": "prefill",
    "IDLE": "idle",
}


def stage_of(name: str) -> str | None:
    """The stage a GPU range stands for: ``draft``, ``verify``, ``draft_extend``, ``decode``, ``prefill``,
    ``draft_step`` (a draft-model forward, always inside a draft or draft extend), ``idle``; None for a
    range that is not a stage (scheduler bookkeeping, copies)."""
    text = name.strip()
    m = _STEP.match(text)
    if m:
        return _MODES.get(m.group(1).upper(), "decode")
    low = text.lower()
    if low in ("draft", "draft_decode"):
        return "draft"
    if low in ("draft_extend", "draft extend"):
        return "draft_extend"
    if low in ("verify", "target_verify"):
        return "verify"
    if low.startswith(("scheduler.", "copy_", "recv_", "process_", "get_next", "send_")):
        return None
    if not _GENERIC.search(text):
        return None
    if "verify" in low:
        return "verify"
    if "draft" in low and "extend" in low:
        return "draft_extend"
    if "draft" in low:
        return "draft"
    if "prefill" in low or "extend" in low:
        return "prefill"
    return "decode"  # decode_step_3, forward_7, step_2: one decode step


def batch_size(name: str) -> int | None:
    m = _BS.search(name)
    return int(m.group(1)) if m else None


@dataclass
class Part:
    """One outermost stage range."""

    start: float
    end: float
    name: str
    stage: str
    nested: list[tuple[float, float, str]] = field(default_factory=list)


@dataclass
class Group:
    """A decode cycle (``kind`` "spec" or "decode") or a prefill batch (``kind`` "prefill")."""

    kind: str
    parts: list[Part] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.parts[0].start

    @property
    def end(self) -> float:
        return max(p.end for p in self.parts)

    def has(self, stage: str) -> bool:
        return any(p.stage == stage for p in self.parts)

    @property
    def complete(self) -> bool:
        if self.kind == "spec":
            return all(self.has(s) for s in SPEC_PARTS)
        return True

    @property
    def bs(self) -> int | None:
        for stage in ("verify", "decode", "prefill", "draft_extend"):
            for p in self.parts:
                if p.stage == stage and (b := batch_size(p.name)) is not None:
                    return b
        return None


def outermost(ranges: Iterable[tuple[float, float, str]]) -> list[Part]:
    """The stage ranges that no other stage range contains, each with the stage ranges nested in it.
    Ranges that are not stages are dropped; ``idle`` ones too (nothing to decode)."""
    staged = [(s, e, n, st) for s, e, n in ranges if (st := stage_of(n)) is not None and e >= s]
    staged.sort(key=lambda r: (r[0], -r[1]))
    out: list[Part] = []
    for s, e, n, st in staged:
        if out and s >= out[-1].start and e <= out[-1].end:
            out[-1].nested.append((s, e, n))
            continue
        if st == "idle":
            continue
        out.append(Part(s, e, n, st))
    return out


def group(parts: list[Part]) -> list[Group]:
    """Cycles and prefill batches, in time order. A cycle starts at its ``draft`` (or at a verify with no
    draft before it: a trace that starts mid-cycle, or drafting switched off); the ``draft_extend`` after
    a verify closes the cycle, the one after a prefill belongs to that prefill batch."""
    groups: list[Group] = []
    cur: Group | None = None

    def close() -> None:
        nonlocal cur
        if cur is not None and cur.parts:
            groups.append(cur)
        cur = None

    for p in parts:
        st = p.stage
        if st == "prefill":
            close()
            cur = Group("prefill", [p])
        elif st in ("draft", "draft_step"):
            if cur is not None and cur.kind == "spec" and not cur.has("verify") and cur.has("draft"):
                cur.parts.append(p)  # a draft split in two ranges (PP tail-draft, eager draft steps)
                continue
            close()
            cur = Group("spec", [Part(p.start, p.end, p.name, "draft", p.nested)])
        elif st == "verify":
            if (
                cur is not None
                and cur.kind == "spec"
                and not cur.has("verify")
                and not cur.has("draft_extend")
            ):
                cur.parts.append(p)
            else:
                close()
                cur = Group("spec", [p])
        elif st == "draft_extend":
            if (
                cur is not None
                and not cur.has("draft_extend")
                and (cur.kind == "prefill" or cur.has("verify"))
            ):
                cur.parts.append(p)
                close()
            else:
                close()
                groups.append(Group("spec", [p]))  # the tail of a cycle the trace cut off
        else:  # decode: one plain decode step is a whole cycle
            close()
            groups.append(Group("decode", [p]))
    close()
    return groups
