"""The Queue tab: a profile's sweep, one row per variant, and the keys to steer it while it runs.

Each row is one launch and says where it stands — pending, launching (with the phase it is in and the
launch's ETA), benchmarking (runs so far), done (tok/s · accept · Δ % vs the first variant; one line
per client point when the sweep has several, with its interval and runs) or failed (with its triage
kind) — and the title line gives the sweep's ETA from the learned launch and benchmark times. ``w`` starts the
profile's sweep or resumes the unfinished one (the queue is the same file ``eagletui sweep`` uses, so
a sweep started headless continues here and the other way round); ``x`` skips, ``R`` retries, ``A``
aborts after the variant in flight, ``<``/``>`` move a pending variant in the run order.

The work is :class:`~eagletui.session.sweep.queue.SweepRunner`'s; this widget only renders its queue and
runs it in a worker over the screen's live workspace and session model.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

from eagletui.core.textsafe import inert
from eagletui.session.sweep.cells import BENCHMARKING, DONE, FAILED, LAUNCHING, PENDING, SKIPPED, SweepError
from eagletui.session.sweep.files import queue_path
from eagletui.session.sweep.queue import SweepQueue, spec_fingerprint
from eagletui.session.sweep.report import cell_line
from eagletui.session.sweep.runner import SweepRunner
from eagletui.ui.workers import WorkerFailures

_STYLE = {PENDING: "dim", LAUNCHING: "bold", BENCHMARKING: "bold", DONE: "", FAILED: "red", SKIPPED: "dim"}


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def row_text(queue: SweepQueue, i: int, *, phase_eta: float | None = None, now: float | None = None) -> str:
    """One launch's line (plain text; the widget styles it)."""
    v = queue.variants[i]
    measured = queue.measured()
    base = measured[0].tok_s if measured and len(v.cells) == 1 else None
    head = f"{queue.order.index(i) + 1:>2}. {v.name}"
    if v.state == LAUNCHING:
        eta = f", launch ETA {fmt_s(phase_eta)}" if phase_eta is not None else ""
        return f"{head}  launching ({v.phase or 'launch'}{eta})"
    if v.state == BENCHMARKING:
        pol = queue.repeat_policy
        want = f"{pol.repeats}" if not pol.adaptive else f"{pol.min_repeats}–{pol.max_repeats}"
        runs = sum(len(c.good) for c in v.cells)
        cells = f" over {len(v.cells)} cells" if len(v.cells) > 1 else ""
        return f"{head}  benchmarking {runs} run{'s' if runs != 1 else ''}{cells} ({want} a cell)"
    if v.state == DONE and len(v.cells) > 1:
        runs = sum(len(c.good) for c in v.cells)
        return f"{head}  done  {len(v.cells)} cells, {runs} runs"
    if v.state == DONE:
        mean, _sd, _n = v.tok_s()
        acc = v.accept()
        parts = [
            f"{mean:.1f} tok/s" if mean is not None else "- tok/s",
            f"accept {acc:.2f}" if acc else "accept -",
        ]
        if i and mean is not None and base:
            parts.append(f"Δ {(mean - base) / base * 100:+.1f}%")
        elif i == 0:
            parts.append("baseline")
        return f"{head}  done  " + " · ".join(parts)
    if v.state == FAILED:
        return f"{head}  failed ({v.failure_kind or '?'})"
    return f"{head}  {v.state}"


def title_text(queue: SweepQueue | None, running: bool, now: float | None = None, history: Any = None) -> str:
    if queue is None:
        return "no sweep: this profile has no [sweep] table"
    c = queue.counts()
    done = c.get(DONE, 0) + c.get(FAILED, 0) + c.get(SKIPPED, 0)
    if running:
        state = "running"
    elif queue.paused:
        state = "paused"
    elif queue.aborted:
        state = "aborted"
    elif queue.finished:
        state = "finished"
    else:
        state = "not started" if queue.started_wall is None else "stopped"
    pol = queue.repeat_policy
    runs = (
        f"{pol.repeats} repeat(s)"
        if not pol.adaptive
        else f"{pol.min_repeats}–{pol.max_repeats} runs (adaptive)"
    )
    if queue.finished:
        eta = "0:00"
    else:
        e = queue.eta(now, history)
        eta = fmt_s(e.seconds) if e.complete else (f"≥ {fmt_s(e.seconds)}" if e.seconds else "?")
    return f"sweep {done}/{len(queue.variants)} · {runs} · {state} · ETA {eta}"


#: Under the title when the profile has no sweep: where to start.
NO_SWEEP_HINT = (
    "A [sweep] table lists toggles × values (or variants) and client settings (concurrency …); eagletui\n"
    "launches each server config once, benchmarks every client setting in it until the answer is clear,\n"
    "unattended, and ranks them. Start from the example (the rules: docs/sweeps.md):\n"
    "  eagletui profile init my-sweep.toml --example demo-sweep"
)


class SweepQueueView(WorkerFailures, Widget, can_focus=True):
    DEFAULT_CSS = """
    SweepQueueView { display: none; height: 1fr; padding: 0 1; }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("w", "start", "Start/resume sweep", id="queue.start", show=False),
        Binding("x", "skip", "Skip", id="queue.skip", show=False),
        Binding("R", "retry", "Retry", id="queue.retry", show=False),
        Binding("A", "abort", "Abort", id="queue.abort", show=False),
        Binding("less_than_sign", "move(-1)", "Earlier", id="queue.up", show=False),
        Binding("greater_than_sign", "move(1)", "Later", id="queue.down", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.queue: SweepQueue | None = None
        self.cursor = 0
        self.running = False

    # ------------------------------------------------------------------ state

    def _host(self) -> Any:
        return self.screen  # the MainScreen: driver, model, notify

    def load(self) -> SweepQueue | None:
        """The unfinished queue of this target + profile, else a fresh plan (None without [sweep])."""
        screen = self._host()
        profile = getattr(screen.model, "profile", None)
        ws = getattr(screen.driver, "workspace", None)
        if profile is None or profile.sweep is None or not profile.path:
            return None
        target = ws.target if ws is not None else screen.model.state.target
        path = queue_path(target, profile.path)
        queue: SweepQueue | None = None
        if path.exists():
            try:
                old = SweepQueue.load(path).adopt(profile.sweep)
                if old.fingerprint == spec_fingerprint(profile.sweep) and not old.finished:
                    queue = old
            except SweepError as exc:
                self.notify(str(exc), severity="warning")
        if queue is None:
            queue = SweepQueue.plan(profile.sweep, target=target, profile_path=profile.path, profile=profile)
            queue.path = path
        return queue

    def on_mount(self) -> None:
        try:
            self.queue = self.load()
        except Exception:  # no screen model yet (tests) or a profile without a path: an empty view
            self.queue = None
        # The tab is always in the bar (key 5, as the README's key table says): without a [sweep] its
        # pane says how to get one, instead of a key that leads to a tab nobody can see.

    # ------------------------------------------------------------------ render

    def render(self) -> Text:
        q = self.queue
        out = Text(title_text(q, self.running, history=self._history()), style="bold")
        out.append("\n")
        if q is None:
            out.append(NO_SWEEP_HINT, style="dim")
            return out
        if q.paused:
            out.append(f"paused: {q.paused}\n", style="red")
        phase_eta = self._launch_eta()
        for pos, i in enumerate(q.order):
            v = q.variants[i]
            line = row_text(q, i, phase_eta=phase_eta if v.state == LAUNCHING else None)
            style = _STYLE.get(v.state, "")
            if pos == self.cursor:
                style = (style + " reverse").strip()
            out.append("▶ " if v.state in (LAUNCHING, BENCHMARKING) else "  ")
            out.append(line, style=style)  # Text.append: names are never parsed as markup
            out.append("\n")
            if len(v.cells) > 1 and v.state in (BENCHMARKING, DONE):
                for ci in range(len(v.cells)):
                    out.append(
                        "        " + cell_line(v, ci, q) + "\n", style="dim" if v.state != DONE else ""
                    )
            if v.max_rate.get("text"):  # [sweep.max_rate]: the highest request rate meeting the [slo]
                out.append(f"        max rate: {inert(str(v.max_rate['text']))[:200]}\n")
        done = [v for v in q.variants if v.state == DONE and v.recheck_of is None]
        if len(done) >= 2:
            points = q.variants[0].cells
            for ci, d in enumerate(q.decisions()):
                if d.winner is None:
                    continue
                where = f" at {points[ci].label}" if len(points) > 1 else ""
                by = f" by {q.goal.unit}" if q.goal.kind != "tok_s" else ""  # [sweep] objective
                out.append(f"\n  best{where}{by}: {q.variants[d.winner].name} — {d.short()}")
            out.append("\n")
        out.append("\nw start/resume · x skip · R retry · A abort · < > reorder", style="dim")
        return out

    def _history(self) -> Any:
        try:
            return self._host().model.history
        except Exception:
            return None

    def _launch_eta(self) -> float | None:
        """Seconds left of the launch in flight, from the phase history's medians."""
        try:
            model = self._host().model
            la = model.state.launch
            est = model.estimates()
        except Exception:
            return None
        if la is None or not est:
            return None
        left = sum(med for p, (med, _p95) in est.items() if p in la.phases and la.phases[p].seconds is None)
        return left or None

    def changed(self) -> None:
        self.refresh()
        host = self._host()
        if hasattr(host, "config_changed") and getattr(host.driver, "workspace", None) is not None:
            ws = host.driver.workspace
            host.model.staged.rebase(ws.profile)  # the Tune tab shows the variant that runs
            host.config_changed()

    # ------------------------------------------------------------------ keys

    def _selected(self) -> int | None:
        if self.queue is None or not self.queue.order:
            return None
        self.cursor = max(0, min(self.cursor, len(self.queue.order) - 1))
        return self.queue.order[self.cursor]

    def _done(self, why: str | None) -> None:
        if why:
            self.notify(why, severity="warning")
        elif self.queue is not None:
            self.queue.save()
        self.refresh()

    def action_cursor(self, by: int) -> None:
        self.cursor += by
        self._selected()
        self.refresh()

    def action_skip(self) -> None:
        i = self._selected()
        if i is not None and self.queue is not None:
            self._done(self.queue.skip(i))

    def action_retry(self) -> None:
        i = self._selected()
        if i is not None and self.queue is not None:
            self._done(self.queue.retry(i))

    def action_abort(self) -> None:
        if self.queue is not None and self.running:
            self.queue.abort()
            self._done(None)
            self.notify("the sweep stops after the variant in flight", title="sweep")

    def action_move(self, by: int) -> None:
        i = self._selected()
        if i is None or self.queue is None:
            return
        why = self.queue.move(i, by)
        if why is None:
            self.cursor = self.queue.order.index(i)
        self._done(why)

    def action_start(self) -> None:
        host = self._host()
        d = host.driver
        if not d.can_launch or getattr(d, "workspace", None) is None:
            self.notify(d.refusal(), severity="warning")
            return
        if self.running:
            self.notify("the sweep is running", severity="warning")
            return
        if getattr(d, "control_busy", False) or getattr(d, "benchmarking", False):
            self.notify("a launch, stop or benchmark is in progress", severity="warning")
            return
        if self.queue is None or self.queue.finished and not self.queue.aborted:
            self.queue = self.load()  # a finished sweep starts over; an aborted one goes on
        if self.queue is None:
            self.notify("this profile has no [sweep] table", severity="warning")
            return
        self.queue.aborted = False
        self.run_worker(self._run(d), name="sweep", group="sweep", exclusive=True, exit_on_error=False)

    async def _run(self, d: Any) -> None:
        host = self._host()
        assert self.queue is not None
        runner = SweepRunner(host.model.profile, self.queue, d.workspace, host.model, on_change=self.changed)
        runner.adopt_current()
        self.running = True
        d.control_busy = True  # manual relaunch/stop/bench are refused while the sweep drives the host
        self.refresh()
        started = time.monotonic()
        try:
            await runner.run()
            self.notify(f"sweep over after {fmt_s(time.monotonic() - started)}", title="sweep")
        except Exception as exc:
            self.notify(f"sweep stopped: {type(exc).__name__}: {exc}", title="sweep", severity="error")
        finally:
            d.control_busy = False
            self.running = False
            self.refresh()
