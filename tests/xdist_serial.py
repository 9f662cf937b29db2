"""The xdist scheduler of the test suite: ``loadgroup``, with the ``serial`` group held back to the end.

Tests in an ``xdist_group`` run on one worker one after another (one Slurm cluster, one Chromium). The
``serial`` group is more than that: its tests measure time on the simulator (speed ratios, stall and
staleness thresholds, ETAs), so they run last, on one worker, once every other test has finished and the
other workers have been let go: the suite's own parallelism is not what they measure. (A machine busy
with something else still is; those tests are written to hold under such load.) Everything else is
scheduled exactly as ``--dist loadgroup`` does.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadGroupScheduling

SERIAL = "serial"


class SerialLastScheduling(LoadGroupScheduling):
    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._held: dict[str, bool] | None = None
        self._runner: Any = None

    @property
    def tests_finished(self) -> bool:
        return self._held is None and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return self._held is not None or super().has_pending

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
        for node in list(self.nodes)[len(self.workqueue) or 1 :]:
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
        if node is self._runner:
            self._runner = None  # another worker takes the serial unit
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
        if self._held is None:
            node.shutdown()
            return
        if self._runner is None:
            # the first worker to run out of work will run the serial unit; the others finish what they
            # hold (a worker runs its last test only once it is told it gets no more) and go
            self._runner = node
            for other in self.nodes:
                if other is not node and not other.shutting_down:
                    other.shutdown()
        self._release()

    def _release(self) -> None:
        """Send the serial unit once every other worker is done (the runner may still hold its own last
        test: it runs that one, then the serial ones)."""
        runner = self._runner
        if self._held is None or runner is None or runner not in self.assigned_work:
            return
        if any(self._pending_of(work) for n, work in self.assigned_work.items() if n is not runner):
            return
        held, self._held = self._held, None
        self.assigned_work[runner][SERIAL] = held
        collection = self.registered_collections[runner]
        runner.send_runtest_some([collection.index(nodeid) for nodeid in held])
        runner.shutdown()
