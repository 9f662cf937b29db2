"""Drafters of known acceptance: the simulator's copies of ``shared/known-drafters`` (the real server's
pairs whose acceptance is fixed by construction), so eagletui meets on the simulator the distributions a
real drafter gives.

* ``work``: every draft token is accepted: accept = steps + 1 in every verify of every request.
* ``half``: the real "half" drafter keeps the target's token for about half of the vocabulary, and the
  target repeats a prompt's last token forever, so a request's acceptance is decided by how its prompt
  ends: one ending in "." accepts every draft token (steps + 1), one ending in "?" none (1.0). Per
  request the accept length is therefore **bimodal** (the pooled mean of a run lies between the modes,
  where no request is); other endings fall on either side by the character (half of them each way).

Without ``--sim-drafter`` acceptance is per token with the probability of ``--sim-draft-quality``
(:func:`eagletui.sim.perf.sample_accept_len`).
"""

from __future__ import annotations

#: The ``--sim-drafter`` choices.
DRAFTERS = ("work", "half")


def fits(prompt: str) -> bool:
    """Does the "half" drafter predict this prompt's continuation? By its last visible character."""
    text = prompt.rstrip()
    if not text:
        return False
    last = text[-1]
    if last == ".":
        return True
    if last == "?":
        return False
    return ord(last) % 2 == 0


def known_accept(drafter: str, depth: int, prompt: str) -> int:
    """Tokens one verify yields for a request (bonus token included) with a drafter of known acceptance
    at ``depth`` draft positions."""
    if drafter == "work" or (drafter == "half" and fits(prompt)):
        return depth + 1
    return 1
