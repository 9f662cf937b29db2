"""A real Slurm cluster for the tests: Debian's slurm-wlm + munge, one slurmctld, ``slurmd -N n1`` and
``-N n2`` on 127.0.0.1 (``tools/slurm_cluster.py``).

``.ci/run`` starts the cluster before the tests and exports ``EAGLETUI_SLURM_DIR``; the tests use it
and leave it running. Without that variable the first test that needs Slurm starts a cluster of its
own in a temp dir and tears it down when the session ends. Where Slurm is not installed (or we are
not root) the tests are skipped with the reason, except under ``CI=true``, where that is a failure:
CI must run them.

Every test gets a profile name of its own; at teardown any job still carrying it is cancelled (so a
failing test does not leave the nodes busy for the next), and the test that cares asserts there was
none.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.slurm_cluster import Cluster, ClusterError, missing_binaries

REPO = Path(__file__).resolve().parents[1]


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the Slurm tests must run in CI: {why}")
    pytest.skip(why)


def free_port_span(span: int = 4) -> int:
    """A port ``p`` with ``p .. p + span - 1`` all free, drawn outside the kernel's ephemeral range.

    A sweep's job slot ``i`` serves on ``port + i`` (every emulated node is 127.0.0.1), so a plain free
    port is not enough: ``port + 1`` may be another test's server (CI saw both slots of a sweep refused
    as "port in use"); ``free_port`` says why the ephemeral range is avoided."""
    from eagletui.commands.demo import free_port

    return free_port(span)


@pytest.fixture(scope="session", name="slurm_cluster")
def slurm_cluster_fixture() -> Iterator[Cluster]:
    shared = os.environ.get("EAGLETUI_SLURM_DIR")
    if shared:
        cluster = Cluster(shared)
        status = cluster.status()
        if not status["up"]:
            pytest.fail(f"EAGLETUI_SLURM_DIR={shared} names a cluster that is not up: {status}")
        yield cluster
        return
    missing = missing_binaries()
    if missing:
        _unavailable(f"Slurm is not installed ({', '.join(missing)}): apt-get install -y slurm-wlm munge")
    if os.geteuid() != 0:
        _unavailable("the emulated Slurm cluster runs its daemons as root")
    root = tempfile.mkdtemp(prefix="eagletui-slurm-")
    cluster = Cluster(root)
    try:
        cluster.start()
    except (ClusterError, OSError) as exc:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"the emulated Slurm cluster did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class SlurmCase:
    """One test's view of the cluster: its own profile name, its jobs, a profile writer."""

    cluster: Cluster
    name: str
    tmp: Path

    @property
    def conf(self) -> str:
        return str(self.cluster.conf)

    def jobs(self, states: str = "") -> list[tuple[str, str, str]]:
        """(job id, state, name) of this test's jobs in the queue (pending, running, completing)."""
        argv = ["squeue", "-h", "-o", "%i|%T|%j"]
        if states:
            argv += ["-t", states]
        res = self.cluster.run(*argv)
        out = []
        for line in res.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].startswith(f"eagletui-{self.slug}-"):
                out.append((parts[0], parts[1], parts[2]))
        return out

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name).strip("_")[:24]

    def wait_jobs(
        self, count: int, state: str = "RUNNING", timeout: float = 60
    ) -> list[tuple[str, str, str]]:
        deadline = time.monotonic() + timeout
        jobs: list[tuple[str, str, str]] = []
        while time.monotonic() < deadline:
            jobs = [j for j in self.jobs() if j[1] == state]
            if len(jobs) >= count:
                return jobs
            time.sleep(0.2)
        raise AssertionError(f"{count} {state} job(s) of {self.name} expected, squeue shows {self.jobs()}")

    def wait_gone(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.jobs():
                return
            time.sleep(0.2)
        raise AssertionError(f"jobs of {self.name} still queued: {self.jobs()}")

    def cancel_all(self) -> None:
        ids = [j[0] for j in self.jobs()]
        if ids:
            self.cluster.run("scancel", *ids, check=False)

    def profile(
        self,
        *,
        nodes: int = 1,
        port: int | None = None,
        partition: str = "debug",
        slurm: str = "",
        args: str = "",
        env: str = "",
        extra: str = "",
        scale: str = "0.003",
    ) -> Path:
        port = port or free_port_span()
        dist = free_port_span()
        p = self.tmp / f"{self.name}.toml"
        p.write_text(
            f"""
name = "{self.name}"
[target]
python = "{sys.executable}"
workdir = "{self.tmp}"
[server]
command = ["{{python}}", "-m", "eagletui.sim"]
port = {port}
runs_dir = "{self.tmp}/runs"
ready_timeout_s = 90
[server.args]
model-path = "moonshotai/Kimi-K2.5"
tp = 8
speculative-algorithm = "EAGLE3"
speculative-draft-model-path = "lmsys/Kimi-K2.5-EAGLE3"
speculative-num-steps = 3
speculative-eagle-topk = 1
speculative-num-draft-tokens = 4
sim-time-scale = {scale}
sim-speed = 20
{args}
[server.env]
{env}
[bench]
num_prompts = 6
concurrency = 3
max_new_tokens = 48
warmup = 1
[slurm]
partition = "{partition}"
nodes = {nodes}
gpus_per_node = 4
time = "10"
slurm_conf = "{self.cluster.conf}"
dist_port = {dist}
poll_s = 0.5
{slurm}
{extra}
"""
        )
        return p


_counter = 0


@pytest.fixture(name="slurm")
def slurm_fixture(
    slurm_cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[SlurmCase]:
    global _counter
    _counter += 1
    base = re.sub(r"[^a-z0-9]+", "", request.node.name.lower().replace("test_", ""))[:14]
    case = SlurmCase(slurm_cluster, f"t{_counter}{base}", tmp_path)
    try:
        yield case
    finally:
        case.cancel_all()


__all__ = ["SlurmCase", "slurm_cluster_fixture", "slurm_fixture"]
