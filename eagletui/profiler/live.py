"""Profile a running SGLang server's decode steps through its own ``/start_profile``, then fetch the traces.

SGLang (0.5.x, ``srt/managers/scheduler_components/profiler_manager.py``) with ``profile_by_stage=true``
and ``num_steps=N`` starts a torch profiler at the first prefill batch and writes
``{profile_id}-TP-{rank}[-DP-…][-PP-…][-EP-…]-EXTEND.trace.json.gz`` when the first decode batch comes (or
after N prefill batches), then profiles the next N decode batches into ``…-DECODE.trace.json.gz``, one
file per rank, logging "Profiling done" after each stage. Nothing is written unless batches run, so a
decode load is driven meanwhile.

The load is one burst of at most N requests sent together after ``/start_profile``, long enough to
outlast the N decode batches, and nothing more until the DECODE trace is written: SGLang counts the
prefill batches that arrive while decode is recorded and, past N of them, ends the DECODE profile as
"EXTEND" with no DECODE trace (sglang 0.5.17 on an H200 with the staggered load of before: 1 capture in
3 waited 180 s for a trace that never came, issue 31 item 3). However the burst is split into prefill
batches they are at most N, so only someone else's traffic can cut the stage; the server's own lines
(:mod:`eagletui.profiler.stage_lines`) say when it did, and the capture is asked for once more.

A steady batch *before* ``/start_profile`` would also keep prefills out of the DECODE stage, but SGLang
keeps ``profile_by_stage`` and its prefill count (0) after the DECODE trace: the next benchmark's first
prefill would start an EXTEND profile, and its trace write stalls the scheduler for seconds.

The traces are written on the host (``output_dir`` in the run dir there) and fetched over the transport
with a size bound, so the same code works for ``local`` and an 8-GPU host over SSH.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from eagletui.core.timings import REAL
from eagletui.profiler.stage_lines import decode_stage
from eagletui.remote.cancel import cancel_and_wait

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


class ProfileCut(ProfileError):
    """This attempt will write no DECODE trace (SGLang ended the stage early, or the load ended first)."""


#: Bytes of the server log read per look at the profile's lines (they come right after the start).
PROFILE_LOG_BYTES = 256 * 1024


def burst_tokens(num_steps: int) -> int:
    """Tokens per request of the profile's burst: enough for ``num_steps`` + 2 decode batches even when
    each accepts 16 draft tokens (the EXTEND flush and the stop each take a batch); the requests are
    cancelled as soon as the DECODE trace is there."""
    return max(256, 16 * (num_steps + 2))


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
    refused_s: float = REAL.sweep.profile_refused_s,
    waves: int | None = None,
) -> int:
    """Concurrent greedy requests so the server runs prefill and decode batches, in waves until
    cancelled (or ``waves`` of them), each wave's requests sent together; returns the number that completed.
    Answers are read with a bound and thrown away. A step profile sends one wave of ``num_steps``
    requests together (module docstring)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    async def one(i: int) -> bool:
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
    cut: Callable[[], Awaitable[str | None]] | None = None,
) -> list[RemoteTrace]:
    """Wait until every rank's ``stage`` file exists and its size held still for one poll.

    ``cut`` (when given) is asked every poll while the files are incomplete: a reason says this attempt
    will write none (:class:`ProfileCut`).

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
        if not complete and cut is not None and not dead:
            reason = await cut()
            # a load that ended because the server died is the death's news, not a cut
            dead = reason is not None and alive is not None and not await alive()
            if reason is not None and not dead:
                raise ProfileCut(reason)
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


async def log_size(transport: Transport, path: str) -> int:
    """Bytes in the server log now (where what it writes next starts), 0 when it cannot be told."""
    try:
        res = await transport.run(["stat", "-c", "%s", path])
        return int(res.stdout.strip() or 0)
    except Exception:  # no log to read: 0, the caller reads from the start or not at all
        return 0


async def log_since(transport: Transport, path: str, offset: int, limit: int) -> str:
    """At most ``limit`` bytes of the server log from byte ``offset`` on ("" when it cannot be read)."""
    try:
        res = await transport.run(
            ["sh", "-c", 'tail -c +"$1" "$2" | head -c "$3"', "sh", str(offset + 1), path, str(limit)]
        )
    except Exception:  # the log could not be read: the caller's other evidence stands
        return ""
    return res.stdout


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
    log_path: str | None = None,
) -> list[Path]:
    """Profile ``num_steps`` decode steps of the server and bring the traces here; returns local paths.
    ``timeout`` None is the transport's ``timings.sweep.profile_s``; ``log_path`` (the server log on the
    host) lets the capture read SGLang's own end-of-profile lines. An attempt SGLang cuts short is said
    and made once more with a new profile id; a second cut is a :class:`ProfileError` that says why."""
    req = request or ProfileRequest()
    timeout = transport.timings.sweep.profile_s if timeout is None else timeout

    async def say(msg: str) -> None:
        if on_step is not None:
            r = on_step(msg)
            if asyncio.iscoroutine(r):
                await r

    client_timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=10, sock_read=60)
    async with aiohttp.ClientSession(timeout=client_timeout) as http:
        attempt = _Attempt(transport, http, base_url, python, host_dir, ranks, api_key, timeout, say, alive)
        try:
            return await attempt.run_and_fetch(req, log_path, local_dir)
        except ProfileCut as first:
            await say(f"{first}; asking once more")
            req = dataclasses.replace(req, profile_id=f"{req.profile_id}-2")
            try:
                return await attempt.run_and_fetch(req, log_path, local_dir)
            except ProfileCut as second:
                why = f"no DECODE trace in two attempts: {second}"
                if "prefill batch arrived" in str(second) or "decode batches were running" in str(second):
                    why += " (is another client sending requests to this server? profile it when it is idle)"
                raise ProfileError(why) from None


#: Why a fetched DECODE trace is not kept when SGLang restarted its profiler after writing it
#: (:mod:`eagletui.profiler.stage_lines`).
OVERWRITTEN = (
    "SGLang started its profiler again at the next prefill batch and wrote that profile over the DECODE "
    "trace (decode batches were running when the profile was asked for, so the DECODE stage came first "
    "and SGLang's prefill count was still 0)"
)


@dataclass
class _Attempt:
    """One ``/start_profile`` and its burst, until every rank's DECODE trace is written or the attempt
    is known to write none."""

    transport: Transport
    http: aiohttp.ClientSession
    base_url: str
    python: str
    host_dir: str
    ranks: int
    api_key: str | None
    timeout: float
    say: Callable[[str], Awaitable[None]]
    alive: Callable[[], Awaitable[bool]] | None

    async def run_and_fetch(self, req: ProfileRequest, log_path: str | None, local_dir: Path) -> list[Path]:
        """One attempt, its traces fetched; a :class:`ProfileCut` when SGLang's log says the DECODE files
        were (or are being) overwritten by a restarted profile. Read after the fetch: SGLang logs the
        restart a batch before it writes over the file, so a fetch that saw no restart line got the
        DECODE trace."""
        log_from = await log_size(self.transport, log_path) if log_path else 0
        output_dir, files = await self.run(req, log_path, log_from)
        paths: list[Path] = []
        for f in files:
            await self.say(f"fetching {f.name} ({f.size / 1e6:.1f} MB)")
            dest = local_dir / f.name
            await fetch(self.transport, f"{output_dir}/{f.name}", dest)
            paths.append(dest)
        if log_path:
            text = await log_since(self.transport, log_path, log_from, PROFILE_LOG_BYTES)
            if decode_stage(text, req.profile_id).restarted:
                raise ProfileCut(OVERWRITTEN)
        return paths

    async def run(self, req: ProfileRequest, log_path: str | None, log_from: int) -> tuple[str, list[RemoteTrace]]:
        output_dir = f"{self.host_dir.rstrip('/')}/profiles/{req.profile_id}"
        # SGLang counts decode batches (profiler_manager: profiler_decode_ct); on a speculative server a
        # decode batch is one cycle: draft + verify + draft extend.
        await self.say(f"asking the server to profile {req.num_steps} decode cycles (decode batches)")
        await start_profile(self.http, self.base_url, req, output_dir, self.api_key)
        burst = max(1, req.num_steps)
        await self.say(f"driving a decode load: {burst} requests at once, none more until the trace is written")
        sweep = self.transport.timings.sweep
        load = asyncio.create_task(
            drive_load(
                self.http,
                self.base_url,
                requests=burst,
                max_new_tokens=burst_tokens(req.num_steps),
                api_key=self.api_key,
                refused_s=sweep.profile_refused_s,
                waves=1,
            )
        )
        load_ended_polls = 0

        async def cut() -> str | None:
            nonlocal load_ended_polls
            stage = None
            if log_path:
                text = await log_since(self.transport, log_path, log_from, PROFILE_LOG_BYTES)
                stage = decode_stage(text, req.profile_id)
                if stage.cut and stage.done:
                    return (
                        f"SGLang ended the DECODE profile as {stage.ended_as or 'a plain stop'} "
                        "(\"Stop profiling-EXTEND...\": a prefill batch arrived while decode was recorded)"
                    )
                if stage.ended_as == "DECODE":
                    return None  # its files are being written
            if load.done():
                load_ended_polls += 1  # one more poll for a trace being written as the load ended
                if load_ended_polls > 1:
                    said = "" if stage is None else (
                        " (its log never said the DECODE profile started)" if not stage.started else ""
                    )
                    return f"the decode load ended before SGLang wrote a DECODE trace{said}"
            return None

        try:
            files = await wait_for_traces(
                self.transport,
                self.python,
                output_dir,
                req.profile_id,
                ranks=self.ranks,
                timeout=self.timeout,
                alive=self.alive,
                cut=cut,
            )
        finally:
            await cancel_and_wait(load, errors=False)  # a failed load is not the capture's answer
        return output_dir, files
