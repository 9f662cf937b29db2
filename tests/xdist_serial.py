"""The xdist scheduler of the test suite: ``loadgroup``, with the ``serial`` group held back to the end.

Tests in an ``xdist_group`` run on one worker one after another (one Slurm cluster, one Chromium). The
``serial`` group is more than that: its tests measure time on the simulator (speed ratios, stall and
staleness thresholds, ETAs), so they run last, once every other test has finished and the other workers
have been let go: the suite's own parallelism is not what they measure. They run in ``LANES`` lanes (three
workers, each taking the next serial test, the longest first (:data:`EXPECTED_S`), as soon as it is done
with its previous one): each of them mostly waits on the simulator's emulated GPU time (about a quarter
of one core), so three of them side by side on the 2-core CI machine are less load than they are written
to hold (a machine busy with something else), and the serial tail of the suite is about a third of
their sum. (Dealt out every third test up front, one lane got 88 s of them and another 62 s: the tail
took the longest lane's time.) In CI they also wait for CI's side work (``GATE_ENV``). Everything
else is scheduled exactly as ``--dist loadgroup`` does.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadGroupScheduling

SERIAL = "serial"
#: how many workers run the serial tests side by side at the end
LANES = 3
#: Seconds each serial test took (the suite alone, 8 workers, 2 cores, 2026-12-03), longest first: the
#: lanes take the longest waiting test next, so no long test starts last and holds the tail alone
#: (taken in file order, the lanes' ends were 25-40 s apart). Four lanes were tried: two or three of
#: these tests failed in each of two runs with nothing else running (a crossover, a speedup, a prediction).
#: Only the order depends on it: a test not listed counts as ``DEFAULT_S``.
EXPECTED_S = {
    "tests/test_fault_ssh.py::test_ssh_cuts_during_launch_and_benchmark": 38.1,
    "tests/test_predict.py::test_a_sweep_with_step_profile_predicts_from_the_profile": 31.9,
    "tests/test_sweep_plan.py::test_3_configs_x_4_concurrencies_is_3_launches_and_the_eta_holds": 30.6,
    "tests/test_sweep_crossover.py::test_the_crossover_is_exported_for_sglang": 26.2,
    "tests/test_ui_demo.py::test_toggle_diff_apply_relaunch_compare": 17.0,
    "tests/test_predict.py::test_sweep_reports_each_predicted_variant_against_its_measurement": 16.9,
    "tests/test_fault_ssh.py::test_sshd_down_then_back": 16.4,
}
DEFAULT_S = 10.0

#: CI's gate (.ci/run): a file that appears once CI's side work (the benchmarks and the real-server dry
#: runs, started beside the suite) is done. The serial tests wait for it, so that they run on a machine
#: as quiet as they have always had, while the side work shares the cores with the parallel part (whose
#: tests must not depend on an idle machine) instead of running after the suite.
GATE_ENV = "EAGLETUI_SERIAL_GATE"
#: the most the serial tests wait for the gate: past it they run anyway and say so
GATE_TIMEOUT_S = 900.0


def expected_s(nodeid: str) -> float:
    """The seconds :data:`EXPECTED_S` gives a test (its parameters share their function's figure)."""
    return EXPECTED_S.get(nodeid.split("[", 1)[0].split("@", 1)[0], DEFAULT_S)


class SerialLastScheduling(LoadGroupScheduling):
    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._held: dict[str, bool] | None = None
        #: the serial tests not yet handed to a lane, once they are released (None before)
        self._queue: list[str] | None = None
        self._runners: list[Any] = []

    @property
    def tests_finished(self) -> bool:
        return self._held is None and not self._queue and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return self._held is not None or bool(self._queue) or super().has_pending

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        units: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
        order = sorted(units, key=lambda s: -len(units[s])) if self.config.option.loadscopereorder else list(units)
        for scope in order:
            self.workqueue[scope] = units[scope]
        self._held = self.workqueue.pop(SERIAL, None)
        keep = max(len(self.workqueue), LANES if self._held else 0, 1)  # -m serial alone: still its lanes
        for node in list(self.nodes)[keep:]:
            self.assigned_work.pop(node)
            node.shutdown()  # more workers than units of work
        for node in self.nodes:
            if self.workqueue:
                self._assign_work_unit(node)
        for node in self.nodes:
            self._reschedule(node)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        super().mark_test_complete(node, item_index, duration)
        self._release()

    def remove_node(self, node: Any) -> str | None:
        crashed = super().remove_node(node)
        if node in self._runners:
            self._runners.remove(node)  # another worker takes its lane (or the other lane takes all)
            for other in self.nodes:
                self._reschedule(other)
        self._release()
        return crashed

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if self.workqueue:
            super()._reschedule(node)
            return
        if self._queue is not None:  # the serial phase
            if node not in self._runners and self._queue and len(self._runners) < LANES:
                self._runners.append(node)  # a lane still free: this worker takes it
            if node in self._runners:
                self._feed(node)  # its lane's next test
            else:
                node.shutdown()
            return
        if self._held is None:
            node.shutdown()
            return
        if node not in self._runners and len(self._runners) < LANES:
            # the first workers to run out of work will run the serial lanes; the others finish what
            # they hold (a worker runs its last test only once it is told it gets no more) and go
            self._runners.append(node)
        elif node not in self._runners:
            node.shutdown()
        self._release()

    def _release(self) -> None:
        """Start the serial tests once every other worker is done (a runner may still hold its own last
        test: it runs that one, then its lane's)."""
        runners = [n for n in self._runners if n in self.assigned_work and not n.shutting_down]
        if self._held is None or not runners:
            return
        if any(self._pending_of(work) for n, work in self.assigned_work.items() if n not in runners):
            return
        _wait_for_gate(self.config)
        held, self._held = self._held, None
        self._queue = sorted(held, key=lambda nodeid: -expected_s(nodeid))  # stable: file order among equals
        for runner in runners:
            self._feed(runner)

    def _feed(self, runner: Any) -> None:
        """Keep two serial tests pending on a lane (a worker runs a test only once it holds the next one
        or is told it gets no more), in order; a lane with none left to take is let go."""
        if runner.shutting_down or self._queue is None:
            return
        work = self.assigned_work[runner].setdefault(SERIAL, {})
        collection = self.registered_collections[runner]
        while self._queue and self._pending_of(self.assigned_work[runner]) < 2:
            nodeid = self._queue.pop(0)
            work[nodeid] = False
            runner.send_runtest_some([collection.index(nodeid)])
        if not self._queue:
            runner.shutdown()


def _wait_for_gate(config: Any) -> None:
    """Block the controller until CI's side work is done (``$EAGLETUI_SERIAL_GATE`` exists). Called only
    once every other test has finished, so nothing else is held up: the lanes' workers wait for work."""
    gate = os.environ.get(GATE_ENV)
    if not gate:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def say(text: str) -> None:
        if reporter is not None:
            reporter.write_line(f"[serial] {text}")
        else:
            print(f"[serial] {text}", file=sys.stderr, flush=True)

    path, start = Path(gate), time.monotonic()
    if not path.exists():
        say(f"waiting for CI's side work ({path}) before the serial tests")
    while not path.exists():
        if time.monotonic() - start > GATE_TIMEOUT_S:
            say(f"{path} did not appear in {GATE_TIMEOUT_S:.0f} s: the serial tests run now, beside whatever side "
                "work is still running")
            return
        time.sleep(0.5)
    waited = time.monotonic() - start
    if waited > 1:
        say(f"the side work was done {waited:.0f} s later: the serial tests start")
