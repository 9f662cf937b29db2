"""The benchmark half of :class:`~eagletui.workspace.Workspace`: which runner measures the server it
follows (the built-in client at :mod:`~eagletui.workspace.endpoint`'s URL, ``sglang.bench_serving`` or
the user's command), with the runners' output echoed into the log pane.

Apart from the workspace's connection and launch/stop because it only uses what they set up (the
transport, the followed run, the running profile) and holds no state of its own beyond the benchmark
counter.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from eagletui.core.events import BenchmarkResult, Event, LogLine
from eagletui.workspace.endpoint import ServerEndpoint
from eagletui.workspace.errors import WorkspaceError

if TYPE_CHECKING:
    from eagletui.bench.bench_serving import RunLines
    from eagletui.core.profile.model import BenchSettings


class Benchmarks(ServerEndpoint):
    """Mixed into :class:`~eagletui.workspace.Workspace`, which sets these."""

    emit: Callable[[Event], None]
    launch_no: int
    bench_no: int
    benchmarking: bool
    link: asyncio.Event

    # ------------------------------------------------------------------ benchmark

    async def benchmark(
        self, stop: asyncio.Event | None = None, *, settings: BenchSettings | None = None
    ) -> BenchmarkResult:
        """Run the profile's benchmark: the built-in client, ``sglang.bench_serving`` or the user's command.
        ``settings`` replaces the profile's ``[bench]`` for this run (a sweep's client point)."""
        if self.benchmarking:
            raise WorkspaceError("a benchmark is already running")
        self.benchmarking = True
        try:
            self.bench_no += 1
            profile = self.running_profile or self.profile
            settings = settings or profile.bench
            if settings.runner == "builtin":
                from eagletui.bench.client import run_builtin
                from eagletui.bench.httplimits import HttpLimits

                url = await self.base_url()
                # repeats = N: N results for this launch, so the runs table reports mean ± stdev and
                # flags a Δ only outside the noise band.
                result = None
                for i in range(max(1, settings.repeats)):
                    if i:
                        self.bench_no += 1
                    api_key = profile.args.get("--api-key")
                    result = await run_builtin(
                        url,
                        settings,
                        bench=self.bench_no,
                        launch=self.launch_no,
                        emit=self.emit,
                        stop=stop,
                        api_key=str(api_key) if api_key not in (None, True, False) else None,
                        api=profile.kind.api,
                        model=str(
                            profile.args.get("--served-model-name") or profile.kind.model(profile.args)
                        ),
                        link=self.link,
                        limits=HttpLimits.for_settings(settings, self.timings),
                    )
                    if result.error or (stop is not None and stop.is_set()):
                        break
                assert result is not None  # at least one repeat ran
                return result
            lines = self._echoed_lines()
            if settings.runner == "bench_serving":
                from eagletui.bench.bench_serving import run_bench_serving

                return await run_bench_serving(
                    settings,
                    port=profile.port,
                    bench=self.bench_no,
                    launch=self.launch_no,
                    emit=self.emit,
                    run_lines=lines,
                    output_file=self._bench_output_path(),
                    python=profile.python,
                    host=profile.host,
                )
            from eagletui.bench.custom import run_custom

            return await run_custom(
                settings, bench=self.bench_no, launch=self.launch_no, emit=self.emit, run_lines=lines
            )
        finally:
            self.benchmarking = False

    def _bench_output_path(self) -> str | None:
        """A fresh result file per run in the run dir (0700); None: bench_serving makes a private dir."""
        import secrets

        name = f"bench-{self.bench_no}-{secrets.token_hex(6)}.jsonl"
        run_dir = self.run.run_dir if self.run is not None else ""
        return f"{run_dir}/{name}" if run_dir else None

    def _echoed_lines(self) -> RunLines:
        """A line source on the host whose output also streams into the log pane (marked ``[bench]``)."""
        from eagletui.bench.bench_serving import local_lines, transport_lines

        assert self.transport is not None
        remote = self.transport.target != "local"
        base = transport_lines(self.transport) if remote else local_lines

        async def run(argv: list[str]) -> AsyncIterator[str]:
            echo = argv[:1] != ["cat"]  # the result file is parsed, not shown
            if remote:  # the SSH stream drops stderr: merge it, tracebacks are what the user needs
                argv = ["sh", "-c", 'exec "$@" 2>&1', "sh", *argv]
            async for line in base(argv):
                if echo:
                    self.emit(LogLine(text=f"[bench] {line}", kind="other", launch=self.launch_no))
                yield line

        return run
