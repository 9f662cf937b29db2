"""NCCL's own warnings that end a communicator's init, as any server's log carries them.

NCCL writes these lines itself (``host:pid:tid [dev] NCCL WARN …``) whatever server it runs under, so
both formats' failure rules share this one test (the fold of NCCL_DEBUG=INFO lines is
:mod:`eagletui.core.host.nccl`; this is the line-level rule a format's classifier asks).
"""

from __future__ import annotations

import re

#: ``NCCL WARN`` lines that end the communicator's init (NCCL's own wording, 2.18 … 2.28): the bootstrap
#: cannot reach a peer (``socketStartConnect``/``socketPollConnect``: connection refused, no route,
#: aborted), or a CUDA call NCCL makes fails. Other warnings (a missing plugin, a topology guess) are not.
_FATAL_WARN_RE = re.compile(
    r"NCCL WARN (?:socket\w*Connect: Connect to \S+ (?:failed|returned)|Cuda failure |"
    r"Call to (?:connect|bind|ibv_\w+) (?:returned|failed)|bootstrap\w*: .*(?:failed|refused|timed out)|"
    r"NET/\w+ ?: .*(?:Connection refused|No route to host|failed))"
)


def fatal_warning(line: str) -> bool:
    """True for an ``NCCL WARN`` line that means the communicator failed (see :data:`_FATAL_WARN_RE`)."""
    return "NCCL WARN" in line and _FATAL_WARN_RE.search(line[:2000]) is not None
