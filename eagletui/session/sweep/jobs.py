"""A sweep on a Slurm cluster: its variants are jobs, ``slurm.max_parallel`` of them at once.

The home-made multi-host loop (``sweep.targets``: one runner per SSH host) stays for plain hosts. On a
cluster the scheduler decides where and when a job runs, so a sweep there is ``max_parallel``
runners on the one login node, each a *job slot*: slot ``i`` submits its variants as jobs of its own
(its own submit lock, so the slots never refuse each other), serves them on ``port + i`` and
``dist_port + i`` (two jobs Slurm puts on one node do not collide; on the emulated cluster every
node is 127.0.0.1) and benchmarks them where Slurm ran them (the head node's address, from the login
node or through the SSH tunnel). The queue, the recording and the ranking are the ordinary sweep's
(:mod:`eagletui.session.sweep.queue`).

Resume: a variant in flight carries its run id, and its run dir its job id and name, so a resume
after a quit, an SSH loss or a SIGKILL of the client follows the very job that runs it
(:func:`resume_variant`) instead of submitting it again. A variant whose job was submitted but whose
run id never reached the queue (the client died in between) is found by its slot and config.

Kept apart from the sweep runner on purpose: the runner calls these few functions and nothing else
about Slurm, so another planner can take them over as they are.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.session.sweep.cells import VariantState
    from eagletui.workspace import Workspace


def job_slots(profile: Profile) -> int:
    """How many variant jobs run at once (0: the profile is not a Slurm one)."""
    return int(profile.slurm.max_parallel) if profile.slurm is not None else 0


def slot_worker(target: str, slot: int) -> str:
    """The name a slot claims variants under in the queue (stable across resumes)."""
    return f"{target} job slot {slot + 1}"


def slot_profile(profile: Profile, slot: int) -> Profile:
    """The variant's profile as slot ``slot`` launches it: its own port (and dist-init port)."""
    if not slot or profile.slurm is None:
        return profile
    return dataclasses.replace(profile, port=profile.port + slot)


async def resume_variant(ws: Workspace, v: VariantState, prof: Profile) -> bool:
    """Follow the job that runs variant ``v`` (in flight when the sweep stopped): by its run id, else —
    the client died between submit and saving the queue — the live run of this slot with the
    variant's config. True when the workspace now follows it."""
    from eagletui.core.profile.model import config_diff

    if ws.control is None:
        return False
    try:
        if v.run_id:
            return await ws.attach_run(v.run_id)
        runs = await ws.control.list_runs()
    except Exception:
        return False
    want = prof.snapshot()
    for run in runs:
        if not (run.alive and run.owned and run.slot == ws.slot and run.profile == prof.name):
            continue
        diff = {k: d for k, d in config_diff(run.config or {}, want).items() if k != "target"}
        if not diff:
            return await ws.attach_run(run.run_id)
    return False
