"""What SGLang's own log says became of a staged profile's DECODE stage.

With ``profile_by_stage`` SGLang (0.5.17 and 0.5.23, ``profiler_manager._profile_batch_predicate``) counts
prefill batches during the DECODE stage too: once that count passes ``num_steps`` it stops the DECODE
profile *as EXTEND* and never writes a DECODE trace. The real turn-4 log (issue 31 item 3) shows it::

    Profiling starts for DECODE. Traces will be saved to: DIR (with profile id: ID)
    Prefill batch, #new-seq: 1, ...
    Stop profiling-EXTEND...
    Profiling done. Traces are saved to: DIR

The trace files alone cannot tell this from a DECODE trace still being written (the EXTEND file is
written either way), so the capture reads these lines: a DECODE stage ended as EXTEND is known at once,
not after the whole capture timeout.

The counters are never reset after the DECODE trace either. Where decode batches already ran when the
profile was asked for, the DECODE stage comes first and the prefill count is still 0 when it is written:
the next prefill starts the profiler again ("for EXTEND") and the next decode batch, past ``num_steps``
decode batches, stops it *as DECODE*, over the DECODE trace. The lent H200's grid (sglang 0.5.17, issue
32) lost its steps-3 profile so: the file held two prefill batches and no decode cycle::

    Profiling starts for DECODE. Traces will be saved to: DIR (with profile id: ID)
    Stop profiling-DECODE...
    Profiling done. Traces are saved to: DIR
    Profiling starts for EXTEND. Traces will be saved to: DIR (with profile id: ID)
    Stop profiling-DECODE...
    Profiling done. Traces are saved to: DIR
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_START = re.compile(r"Profiling starts for (EXTEND|DECODE)\. Traces will be saved to: .* \(with profile id: (\S+)\)")
_STOP = re.compile(r"Stop profiling(?:-(EXTEND|DECODE))?\.\.\.")
_DONE = "Profiling done. Traces are saved to:"


@dataclass(frozen=True)
class DecodeStage:
    """The DECODE stage of one profile id, as the log told it so far."""

    started: bool = False
    #: the stage named by the "Stop profiling-STAGE..." line that ended it ("" for a plain stop), None
    #: while it records
    ended_as: str | None = None
    #: "Profiling done" followed that stop: the file (named for ``ended_as``) is written
    done: bool = False
    #: the profiler started again for this profile id after that: what it records is written over the
    #: file (module docstring)
    restarted: bool = False

    @property
    def cut(self) -> bool:
        """SGLang ended the DECODE profile as something else: no DECODE trace will come."""
        return self.started and self.ended_as is not None and self.ended_as != "DECODE"


def decode_stage(text: str, profile_id: str) -> DecodeStage:
    """The DECODE stage of ``profile_id`` in ``text`` (the server log written since the profile was
    asked for; each TP rank logs the same lines, the first of each counts)."""
    started = done = restarted = False
    ended: str | None = None
    for line in text.splitlines():
        if not started:
            m = _START.search(line)
            started = bool(m and m.group(1) == "DECODE" and m.group(2) == profile_id)
            continue
        if ended is None:
            m = _STOP.search(line)
            if m:
                ended = m.group(1) or ""
        elif not done:
            done = _DONE in line
        elif (m := _START.search(line)) and m.group(2) == profile_id:
            restarted = True
            break
    return DecodeStage(started, ended, done, restarted)
