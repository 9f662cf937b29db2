"""When Python's full garbage collections run while the app is open.

A full (generation 2) collection walks every container object alive. Once a log is streaming that is
tens of thousands of Textual render caches on top of the ~70,000 objects the app starts with, and each
pass paused the event loop for 25-80 ms, several times a second during a burst: the key pressed at
that moment waited for it. Two changes, both undone when the app closes:

* the objects alive after the first frame (modules, classes, widgets: they live as long as the app)
  are frozen (``gc.freeze``), so no collection walks them again;
* automatic full collections are switched off and run from the app's 10 Hz tick instead, when no key
  or mouse input and no session event came for ``quiet`` seconds (at least ``min_gap`` apart), and in
  any case every ``max_gap`` seconds. Young generations are collected as usual, which frees most
  short-lived cycles. Events count because a key pressed during a log burst waits behind the burst
  for longer than ``quiet``: the collection then ran while the key was still queued, and the loop
  was already the slowest part (``benchmarks/ui_load.py``: 80-660 ms pauses mid-burst on a loaded
  2-core machine).

The same idea as Textual's own ``PAUSE_GC_ON_SCROLL``, applied to typing instead of scrolling.
"""

from __future__ import annotations

import gc
import time

_NEVER = 1_000_000_000  # a gen-2 threshold automatic collection never reaches


class IdleCollector:
    """One per app; only the first started in a process takes charge (the collector's settings are
    process-wide), and it touches the frozen set only if nothing else had frozen objects before."""

    _owner: IdleCollector | None = None

    def __init__(
        self, *, quiet: float = 1.0, min_gap: float = 5.0, max_gap: float = 60.0, active: bool = True
    ) -> None:
        self.quiet, self.min_gap, self.max_gap = quiet, min_gap, max_gap
        self.enabled = active  # off (textual_patches switch): Python's own GC policy, untouched
        self._saved: tuple[int, ...] | None = None
        self._froze = False
        self._last_input = 0.0
        self._last_full = 0.0
        self.collections = 0  # full collections run here (reported by benchmarks/ui_load.py)

    @property
    def active(self) -> bool:
        return self._saved is not None

    def start(self) -> None:
        if not self.enabled or self._saved is not None or IdleCollector._owner is not None:
            return
        IdleCollector._owner = self
        gc.collect()
        if gc.get_freeze_count() == 0:  # someone else's frozen objects are theirs to unfreeze
            gc.freeze()
            self._froze = True
        self._saved = gc.get_threshold()
        t0, t1, _ = self._saved
        gc.set_threshold(t0, t1, _NEVER)
        self._last_full = time.monotonic()

    def input_seen(self) -> None:
        """A key, a click or a session event: the user or the log is busy, collect later."""
        self._last_input = time.monotonic()

    def tick(self) -> None:
        """Run a full collection if one is due and the user is not in the middle of typing."""
        if self._saved is None:
            return
        now = time.monotonic()
        since = now - self._last_full
        if since >= self.max_gap or (since >= self.min_gap and now - self._last_input >= self.quiet):
            gc.collect()
            self._last_full = time.monotonic()
            self.collections += 1

    def stop(self) -> None:
        """Back to Python's defaults (tests run many apps in one process)."""
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        self._saved = None
        if self._froze:
            gc.unfreeze()
            self._froze = False
        IdleCollector._owner = None
