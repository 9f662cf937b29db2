"""Profile a running SGLang server's decode steps through its own ``/start_profile``, then fetch the traces.

SGLang (0.5.x, ``srt/managers/scheduler_components/profiler_manager.py``) with ``profile_by_stage=true``
and ``num_steps=N`` starts a torch profiler at the first prefill batch, stops after N prefill batches and
writes ``{profile_id}-TP-{rank}[-DP-…][-PP-…][-EP-…]-EXTEND.trace.json.gz``, then profiles the next N
decode batches into ``…-DECODE.trace.json.gz``, one file per rank, logging "Profiling done" after each
stage. Nothing is written unless batches run, so a short decode load is driven meanwhile.

The traces are written on the host (``output_dir`` in the run dir there) and fetched over the transport
with a size bound, so the same code works for ``local`` and an 8-GPU host over SSH.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from eagletui.core.timings import REAL

if TYPE_CHECKING:
    from eagletui.remote.transport import Transport

MAX_TRACE_BYTES = 2 << 30  # a real 8-rank decode trace with stacks is a few hundred MB per rank
STAGES = ("DECODE", "EXTEND")

# Lists the profile's files on the host: name, size, mtime as JSON (stdlib only; the host has python).
_LIST = r"""
import json, os, sys
d, prefix = sys.argv[1], sys.argv[2]
out = []
try:
    for n in sorted(os.listdir(d)):
        if n.startswith(prefix) and n.endswith((".trace.json.gz", ".trace.json")):
            st = os.stat(os.path.join(d, n))
            out.append([n, st.st_size, st.st_mtime])
except FileNotFoundError:
    pass
print(json.dumps(out))
"""


class ProfileError(Exception):
    """The profile could not be taken or fetched; the message is for the user."""


class ServerGone(ProfileError):
    """The server died while the capture waited for its traces."""


@dataclass(frozen=True)
class ProfileRequest:
    """What is asked of ``/start_profile`` (the fields of SGLang's ``ProfileReq``)."""

    num_steps: int = 5
    activities: tuple[str, ...] = ("CPU", "GPU")
    #: None: leave it to the server (SGLang: True). On sglang 0.5.17 a capture with ``with_stack: false``
    #: and ``record_shapes: false`` was followed by a segfault in the profiler's destructor; the server's
    #: defaults stayed healthy (see docs/real-sglang.md for the runs that decided this).
    with_stack: bool | None = None
    record_shapes: bool | None = None
    profile_id: str = field(default_factory=lambda: f"eagletui-{int(time.time())}-{secrets.token_hex(3)}")

    def body(self, output_dir: str) -> dict[str, Any]:
        return {
            "output_dir": output_dir,
            "num_steps": self.num_steps,
            "activities": list(self.activities),
            "profile_by_stage": True,
            "profile_id": self.profile_id,
            **({"with_stack": self.with_stack} if self.with_stack is not None else {}),
            **({"record_shapes": self.record_shapes} if self.record_shapes is not None else {}),
        }


@dataclass(frozen=True)
class RemoteTrace:
    name: str
    size: int
    stage: str | None

    @property
    def rank(self) -> int | None:
        for part in self.name.split("-TP-")[1:2]:
            head = part.split("-", 1)[0].split(".", 1)[0]
            if head.isdigit():
                return int(head)
        return None


def _stage_of(name: str) -> str | None:
    base = name.removesuffix(".gz").removesuffix(".json").removesuffix(".trace")
    for stage in STAGES:
        if base.endswith("-" + stage):
            return stage
    return None


async def start_profile(
    http: aiohttp.ClientSession,
    base_url: str,
    req: ProfileRequest,
    output_dir: str,
    api_key: str | None = None,
) -> None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with http.post(f"{base_url}/start_profile", json=req.body(output_dir), headers=headers) as resp:
            text = (await resp.content.read(4096)).decode("utf-8", "replace")
            if resp.status != 200:
                raise ProfileError(f"/start_profile answered {resp.status}: {text.strip()[:300]}")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ProfileError(f"/start_profile failed: {exc}") from exc


async def drive_load(
    http: aiohttp.ClientSession,
    base_url: str,
    *,
    requests: int = 8,
    max_new_tokens: int = 96,
    api_key: str | None = None,
    stagger_s: float = REAL.sweep.profile_stagger_s,
    refused_s: float = REAL.sweep.profile_refused_s,
    waves: int | None = None,
) -> int:
    """Concurrent greedy requests so the server runs prefill and decode batches, in waves until
    cancelled (or ``waves`` of them); returns the number that completed. Answers are read with a bound
    and thrown away.

    The starts are staggered: with ``profile_by_stage`` the EXTEND stage only ends after ``num_steps``
    prefill *batches*, and one burst of requests is admitted as one batch, so the DECODE stage (the one
    we want) would never begin."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    async def one(i: int) -> bool:
        await asyncio.sleep(i * stagger_s)
        body = {
            "text": f"Profile request {i}: write a long story about a lighthouse keeper.",
            "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0, "ignore_eos": True},
        }
        try:
            async with http.post(f"{base_url}/generate", json=body, headers=headers) as resp:
                await resp.content.read(1 << 20)
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    completed = 0
    wave = 0
    while waves is None or wave < waves:
        done = await asyncio.gather(*(one(i) for i in range(requests)))
        completed += sum(done)
        wave += 1
        if not any(done):
            await asyncio.sleep(refused_s)  # the server refuses: do not spin
    return completed


async def list_traces(
    transport: Transport, python: str, output_dir: str, profile_id: str
) -> list[RemoteTrace]:
    res = await transport.run([python, "-c", _LIST, output_dir, profile_id])
    if not res.ok:
        raise ProfileError(f"could not list {output_dir} on the host: {res.stderr.strip()[:300]}")
    try:
        rows = json.loads(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else []
    except (ValueError, IndexError) as exc:
        raise ProfileError(f"unexpected answer listing {output_dir}: {res.stdout[:200]!r}") from exc
    return [RemoteTrace(str(n), int(s), _stage_of(str(n))) for n, s, _m in rows]


async def wait_for_traces(
    transport: Transport,
    python: str,
    output_dir: str,
    profile_id: str,
    *,
    ranks: int,
    stage: str = "DECODE",
    timeout: float | None = None,
    alive: Callable[[], Awaitable[bool]] | None = None,
) -> list[RemoteTrace]:
    """Wait until every rank's ``stage`` file exists and its size held still for one poll.

    ``alive`` (when given) is asked every few polls: a server that died while its profiler recorded
    writes no trace, and waiting out ``timeout`` for one only delays the news (sglang 0.5.17's
    scheduler aborted one second into a capture; the wait went on for 120 s). ``timeout`` None and the
    poll are the transport's ``timings.sweep``."""
    timings = transport.timings
    clock, poll = timings.clock, timings.sweep.profile_poll_s
    timeout = timings.sweep.profile_s if timeout is None else timeout
    t0 = clock.monotonic()
    deadline = t0 + timeout
    last: dict[str, int] = {}
    polls = 0
    while True:
        polls += 1
        # asked before the listing: a dead server writes no more, so what is on disk then is final
        dead = alive is not None and polls % 3 == 0 and not await alive()
        files = [f for f in await list_traces(transport, python, output_dir, profile_id) if f.stage == stage]
        sizes = {f.name: f.size for f in files}
        complete = len(files) >= ranks and all(s > 0 for s in sizes.values())
        # complete and either still for one poll or final (a profiler that crashed after "Profiling
        # done" left every rank's trace behind)
        if complete and (sizes == last or dead):
            return sorted(files, key=lambda f: (f.rank is None, f.rank or 0))
        if dead:
            raise ServerGone(
                f"the server died during the capture, {clock.monotonic() - t0:.0f} s in, before its "
                f"{stage} traces were complete"
            )
        last = sizes
        if clock.monotonic() > deadline:
            have = ", ".join(sorted(sizes)) or "none"
            raise ProfileError(
                f"no complete {stage} traces after {timeout:.0f} s in {output_dir} "
                f"(expected {ranks}, have: {have}); is the server busy or profiling already?"
            )
        await clock.sleep(poll)


async def fetch(
    transport: Transport, remote_path: str, local_path: Path, max_bytes: int = MAX_TRACE_BYTES
) -> int:
    """Copy one file from the host, refusing to go past ``max_bytes``; returns the bytes copied."""
    local_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    n = 0
    with open(local_path, "wb") as out:
        async for chunk in transport.stream(["cat", "--", remote_path]):
            n += len(chunk)
            if n > max_bytes:
                raise ProfileError(f"{remote_path} is larger than {max_bytes >> 20} MiB: not fetched")
            out.write(chunk)
    return n


async def capture(
    transport: Transport,
    base_url: str,
    *,
    python: str,
    host_dir: str,
    local_dir: Path,
    ranks: int,
    request: ProfileRequest | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    on_step: Callable[[str], Awaitable[None] | None] | None = None,
    alive: Callable[[], Awaitable[bool]] | None = None,
) -> list[Path]:
    """Profile ``num_steps`` decode steps of the server and bring the traces here; returns local paths.
    ``timeout`` None is the transport's ``timings.sweep.profile_s``."""
    req = request or ProfileRequest()
    timeout = transport.timings.sweep.profile_s if timeout is None else timeout

    async def say(msg: str) -> None:
        if on_step is not None:
            r = on_step(msg)
            if asyncio.iscoroutine(r):
                await r

    output_dir = f"{host_dir.rstrip('/')}/profiles/{req.profile_id}"
    client_timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=10, sock_read=60)
    async with aiohttp.ClientSession(timeout=client_timeout) as http:
        # SGLang counts decode batches (profiler_manager: profiler_decode_ct); on a speculative server a
        # decode batch is one cycle: draft + verify + draft extend.
        await say(f"asking the server to profile {req.num_steps} decode cycles (decode batches)")
        await start_profile(http, base_url, req, output_dir, api_key)
        await say("driving a short decode load")
        sweep = transport.timings.sweep
        load = asyncio.create_task(
            drive_load(
                http,
                base_url,
                api_key=api_key,
                stagger_s=sweep.profile_stagger_s,
                refused_s=sweep.profile_refused_s,
            )
        )
        try:
            files = await wait_for_traces(
                transport, python, output_dir, req.profile_id, ranks=ranks, timeout=timeout, alive=alive
            )
        finally:
            if not load.done():
                load.cancel()
            await asyncio.gather(load, return_exceptions=True)
    paths: list[Path] = []
    for f in files:
        await say(f"fetching {f.name} ({f.size / 1e6:.1f} MB)")
        dest = local_dir / f.name
        await fetch(transport, f"{output_dir}/{f.name}", dest)
        paths.append(dest)
    return paths
