"""Taking a step profile from a running server: /start_profile with SGLang's ProfileReq fields, a decode
load, waiting for every rank's DECODE trace on the host, fetching it over the transport with a bound.

The server here is a real HTTP server that behaves as SGLang's profiler manager does with
profile_by_stage (files appear only once batches ran); the traces it writes are real ones."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest
from aiohttp import web

from eagletui.profiler import summarize_file
from eagletui.profiler.live import ProfileError, ProfileRequest, capture, fetch
from eagletui.remote.local import LocalTransport
from tests.http_app import serve_app

TRACES = Path(__file__).resolve().parent / "fixtures" / "traces"


#: SGLang 0.5.17's own lines when the DECODE stage came first and a prefill restarted the profiler after
#: its trace was written (the lent H200's grid; fixtures/real-sglang-0.5.17-grid), the profile id a field
RESTART_LINES = [
    ln.replace("eagletui-1796183090-41b0d0", "{pid}")
    for ln in (Path(__file__).resolve().parent / "fixtures" / "real-sglang-0.5.17-grid" / "profile-overwritten-r1-s3.log")
    .read_text()
    .splitlines()
    if "] Profiling " in ln or "] Stop profiling" in ln
]


class ProfilingServer:
    def __init__(self, ranks: int, write: bool = True, log: Path | None = None) -> None:
        self.ranks = ranks
        self.write = write
        self.asked: dict | None = None
        self.generated = 0
        #: where the server's log lines go: the real restart's, once its traces are written
        self.log = log
        self.profile_ids: list[str] = []

    async def start_profile(self, request: web.Request) -> web.Response:
        self.asked = await request.json()
        self.profile_ids.append(self.asked["profile_id"])
        self.generated = 0
        return web.Response(text="Start profiling.\n")

    async def generate(self, request: web.Request) -> web.Response:
        self.generated += 1
        if self.asked is not None and self.write and self.generated == 1:
            out = Path(self.asked["output_dir"])
            out.mkdir(parents=True, exist_ok=True)
            pid = self.asked["profile_id"]
            for r in range(self.ranks):
                shutil.copy(
                    TRACES / "decode-graph-TP-0.trace.json.gz", out / f"{pid}-TP-{r}-EXTEND.trace.json.gz"
                )
                shutil.copy(
                    TRACES / f"decode-graph-TP-{r}.trace.json.gz", out / f"{pid}-TP-{r}-DECODE.trace.json.gz"
                )
            if self.log is not None:
                with open(self.log, "a") as f:
                    f.write("".join(ln.replace("{pid}", pid) + "\n" for ln in RESTART_LINES))
        await asyncio.sleep(0.01)
        return web.json_response({"text": "x", "meta_info": {"completion_tokens": 1}})


async def serve(server: ProfilingServer) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/start_profile", server.start_profile)
    app.router.add_post("/generate", server.generate)
    return await serve_app(app)


@pytest.mark.slow
async def test_capture_fetches_every_rank_decode_trace(tmp_path: Path) -> None:
    server = ProfilingServer(ranks=2)
    runner, url = await serve(server)
    transport = LocalTransport()
    steps: list[str] = []
    try:
        req = ProfileRequest(num_steps=3)
        paths = await capture(
            transport,
            url,
            python=sys.executable,
            host_dir=str(tmp_path / "run"),
            local_dir=tmp_path / "local",
            ranks=2,
            request=req,
            timeout=20,
            on_step=steps.append,
        )
    finally:
        await runner.cleanup()
        await transport.close()
    assert server.asked is not None
    assert server.asked["profile_by_stage"] is True and server.asked["num_steps"] == 3
    assert server.asked["activities"] == ["CPU", "GPU"]
    assert server.asked["output_dir"] == str(tmp_path / "run" / "profiles" / req.profile_id)
    assert [p.name for p in paths] == [f"{req.profile_id}-TP-{r}-DECODE.trace.json.gz" for r in range(2)]
    summaries = [summarize_file(p) for p in paths]
    assert [s.rank for s in summaries] == [0, 1]
    assert summaries[1].categories["communication"].count == 96
    assert any("fetching" in s for s in steps)


@pytest.mark.slow
async def test_a_decode_trace_overwritten_by_a_restarted_profile_is_not_kept(tmp_path: Path) -> None:
    """Issue 32 item 1: SGLang's log says it started the profiler again after writing the DECODE trace
    (the real grid's lines): what was fetched may be the restarted profile's prefill batches, so the
    capture asks once more, and says why when that happens again."""
    log = tmp_path / "server.log"
    log.write_text("")
    server = ProfilingServer(ranks=1, log=log)
    runner, url = await serve(server)
    transport = LocalTransport()
    steps: list[str] = []
    try:
        with pytest.raises(ProfileError, match="started its profiler again at the next prefill") as err:
            await capture(
                transport,
                url,
                python=sys.executable,
                host_dir=str(tmp_path / "run"),
                local_dir=tmp_path / "local",
                ranks=1,
                timeout=20,
                on_step=steps.append,
                log_path=str(log),
            )
    finally:
        await runner.cleanup()
        await transport.close()
    assert "another client" in str(err.value)
    assert len(server.profile_ids) == 2 and server.profile_ids[1] == server.profile_ids[0] + "-2"
    assert any("asking once more" in s for s in steps)


@pytest.mark.slow
async def test_no_traces_is_a_clear_timeout(tmp_path: Path) -> None:
    server = ProfilingServer(ranks=1, write=False)
    runner, url = await serve(server)
    transport = LocalTransport()
    try:
        with pytest.raises(ProfileError, match="no DECODE trace in two attempts: the decode load ended"):
            await capture(
                transport,
                url,
                python=sys.executable,
                host_dir=str(tmp_path),
                local_dir=tmp_path / "l",
                ranks=1,
                timeout=30,  # the load ends long before (2 s was reached first beside another suite)
            )
    finally:
        await runner.cleanup()
        await transport.close()


async def test_start_profile_refused_says_why(tmp_path: Path) -> None:
    app = web.Application()

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=400, text="Profiling is already in progress. Call /stop_profile first.")

    app.router.add_post("/start_profile", refuse)
    runner, url = await serve_app(app)
    transport = LocalTransport()
    try:
        with pytest.raises(ProfileError, match="already in progress"):
            await capture(
                transport,
                url,
                python=sys.executable,
                host_dir=str(tmp_path),
                local_dir=tmp_path / "l",
                ranks=1,
                timeout=5,
            )
    finally:
        await runner.cleanup()
        await transport.close()


async def test_fetch_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.trace.json"
    big.write_bytes(b"x" * 300_000)
    transport = LocalTransport()
    try:
        with pytest.raises(ProfileError, match="larger than"):
            await fetch(transport, str(big), tmp_path / "copy", max_bytes=100_000)
        assert await fetch(transport, str(big), tmp_path / "copy2") == 300_000
    finally:
        await transport.close()
