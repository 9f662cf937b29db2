"""The session model: everything one session knows, fed by one ``dispatch(event)``.

The live workspace, a replay and the headless ``eagletui bench`` all push their events into
:meth:`SessionModel.dispatch`; it folds them into the screen state (:class:`SessionState`) and the run
book (:class:`RunBook`), writes them to the recording, learns phase durations for the next launch's
ETA, and then tells its observers. Observers are how anything *outside* the fold reacts: the UI marks
itself dirty and appends log lines, the app toasts, the headless bench prints phase lines. The fold
never toasts, never rings a bell and never touches a widget, so the same model runs with no UI.

Failures around the fold (the recording cannot be written, the run book rejects an event, the phase
history cannot be saved) are not swallowed: each becomes a :class:`Problem` handed to the problem
observers (the UI toasts it, the headless bench prints it), and is kept in :attr:`problems` until
someone listens.

No Textual here (``session`` must not import ``ui``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from eagletui.core.events import PHASES, Event, ServerReady
from eagletui.core.host.page_cache import cache_state
from eagletui.core.phases.history import history_key
from eagletui.core.phases.startup_stats import LaunchRecord, estimates_for
from eagletui.core.profile.staged import StagedConfig
from eagletui.core.runs.book import RunBook
from eagletui.core.state.screen import SessionState
from eagletui.session.export import REPORT_TYPES

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile


class EventWriter(Protocol):
    """Where events are recorded (:class:`~eagletui.session.record.Recorder`). A writer may raise, or
    keep the reason it stopped in an ``error`` attribute; either way the model reports it once."""

    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


class PhaseHistoryStore(Protocol):
    """Phase durations of earlier launches (:class:`~eagletui.core.phases.history.PhaseHistory`)."""

    def record(
        self, key: str, durations: dict[str, float], *, total: float | None = None, cache: str | None = None
    ) -> Any: ...

    def launches(self, key: str) -> list[LaunchRecord]: ...


@dataclass(frozen=True, slots=True)
class Problem:
    """Something around the fold failed; ``source`` says what (record, runs, history)."""

    source: str
    message: str
    severity: str = "error"  # "error" | "warning": the UI's toast severities


Observer = Callable[[Event], None]
ProblemObserver = Callable[[Problem], None]


class SessionModel:
    """State fold + run book + recorder + phase history + staged config for one session."""

    def __init__(
        self,
        *,
        target: str,
        profile: Profile | None = None,
        recorder: EventWriter | None = None,
        history: PhaseHistoryStore | None = None,
        learn_history: bool = True,
    ) -> None:
        self.profile = profile
        self.target = target
        self.state = SessionState(target=target)
        self.runbook = runbook_for(profile)
        self.staged = StagedConfig(profile)
        self.recorder = recorder
        self.history = history
        #: a replay is history already: its launches must not become ETA samples again
        self.learn_history = learn_history
        self.events_seen = 0
        #: why recording is paused (disk full), until it resumes; None while it records (or is off)
        self.recording_paused: str | None = None
        self._closed = False
        self.problems: deque[Problem] = deque(maxlen=50)
        self._observers: list[Observer] = []
        self._problem_observers: list[ProblemObserver] = []
        self._runbook_failed: set[str] = set()  # event types already reported: one toast, not 20,000
        self._reset_observers: list[Callable[[], None]] = []
        #: the launch/phase/benchmark/config events, for an export of the session (a few per launch)
        self.report_events: list[Event] = []
        self._eta_memo: tuple[tuple[int, int, int], tuple[dict[str, tuple[float, float]], str]] | None = None

    # ------------------------------------------------------------------ observers

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` after each event is folded; returns the unsubscribe function."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer) if observer in self._observers else None

    def on_reset(self, observer: Callable[[], None]) -> Callable[[], None]:
        """Call ``observer()`` after :meth:`reset`: whatever shows the old state must clear itself
        (the log view, the charts' caches). Returns the unsubscribe function."""
        self._reset_observers.append(observer)
        return lambda: self._reset_observers.remove(observer) if observer in self._reset_observers else None

    def reset(self) -> None:
        """Forget everything folded so far: a fresh state and run book, ready for a replay's seek to
        fold its catch-up events into. The profile, staged config, recorder and history stay (a seek
        rebuilds what was shown, it is not a new session); the verdict thresholds are the profile's
        again (without a profile the run book adopts the recorded ones from the launch events)."""
        self.state = SessionState(target=self.target)
        self.runbook = runbook_for(self.profile)
        self.report_events = []
        self.events_seen = 0
        self._runbook_failed.clear()
        for obs in list(self._reset_observers):
            obs()

    def on_problem(self, observer: ProblemObserver) -> None:
        """Hand problems to ``observer``, the ones that happened before it subscribed first."""
        self._problem_observers.append(observer)
        for p in list(self.problems):
            observer(p)

    def _problem(self, source: str, message: str, severity: str = "error") -> None:
        p = Problem(source, message, severity)
        self.problems.append(p)
        for obs in list(self._problem_observers):
            obs(p)

    # ------------------------------------------------------------------ the event path

    def dispatch(self, ev: Event) -> None:
        """The single entry for events from any source (live, bench, replay)."""
        self.events_seen += 1
        self.state.apply(ev)
        try:
            self.runbook.apply(ev)
        except Exception as exc:
            if ev.type not in self._runbook_failed:
                self._runbook_failed.add(ev.type)
                self._problem("runs", f"runs table could not take a {ev.type} event: {exc}", "warning")
        rec = self.recorder
        if rec is not None and not self._closed:
            self._record(rec, ev)
        if ev.type in REPORT_TYPES:
            self.report_events.append(ev)
        if isinstance(ev, ServerReady):
            self._record_history()
        for obs in self._observers:
            obs(ev)

    def _record(self, rec: EventWriter, ev: Event) -> None:
        """Write ``ev``; a writer that pauses (disk full: the Recorder keeps the error and tries
        again with every event) is kept and reported once when it pauses and once when it resumes;
        one that stopped for good (or raised) is let go."""
        try:
            rec.write(ev)
            # The Recorder keeps a write error (disk full) instead of raising it into the pump.
            error = getattr(rec, "error", None)
            paused = bool(getattr(rec, "paused", False)) and bool(error)
        except Exception as exc:
            error, paused = f"recording stopped: {exc}", False
        if paused:
            if self.recording_paused is None:
                self.recording_paused = str(error)
                self._problem("record", str(error))
            return
        if error:
            self.recorder = None
            self.recording_paused = None
            self._problem("record", str(error))
            return
        if self.recording_paused is not None:
            self.recording_paused = None
            lost = getattr(rec, "lost", 0)
            self._problem(
                "record",
                f"recording resumed; {lost} event(s) could not be written while the disk was full",
                "warning",
            )

    # ------------------------------------------------------------------ phase history

    def _record_history(self) -> None:
        la = self.state.launch
        if self.history is None or la is None or not self.learn_history:
            return
        try:
            self.history.record(
                history_key(la.config), la.phase_durations(), total=la.ready_after, cache=self.cache_state()
            )
        except Exception as exc:
            self._problem("history", f"phase durations not saved: {exc}", "warning")

    def cache_state(self) -> str | None:
        """The current launch's page cache as the preflight before it measured it (None: not measured)."""
        la = self.state.launch
        obs = self.state.diagnoser.launches.get(la.launch) if la is not None else None
        return cache_state(obs.host.get("checkpoint")) if obs is not None else None

    def _estimates(self) -> tuple[dict[str, tuple[float, float]], str]:
        """Once per event at most: the repaint asks ten times a second."""
        la = self.state.launch
        if self.history is None or la is None:
            return {}, ""
        memo = (la.launch, self.events_seen, id(self.history))
        if self._eta_memo is not None and self._eta_memo[0] == memo:
            return self._eta_memo[1]
        try:
            key = history_key(la.config)
        except (TypeError, ValueError):  # a config the key cannot be built from: no ETA
            return {}, ""
        ests, basis = estimates_for(self.history.launches(key), self.cache_state())
        out = ({p: v for p, v in ests.items() if p in PHASES}, basis)
        self._eta_memo = (memo, out)
        return out

    def estimates(self) -> dict[str, tuple[float, float]]:
        """Phase → (p50, p90) seconds from earlier launches of the same signature, of the same page-cache
        state when the preflight measured it and some did (core/phases/startup_stats.estimates_for)."""
        return self._estimates()[0]

    def eta_basis(self) -> str:
        """What :meth:`estimates` rests on, in words (``warm page cache, 4 launches``); "" without history."""
        return self._estimates()[1]

    # ------------------------------------------------------------------ end

    def close(self) -> None:
        """Close the recording; a failure to flush it is a problem, not a silent loss."""
        rec = self.recorder
        if rec is not None and not self._closed:
            self._closed = True  # the reference stays: callers print where the session was recorded
            try:
                rec.close()
            except Exception as exc:
                self._problem("record", f"closing the recording failed: {exc}")


def runbook_for(profile: Profile | None) -> RunBook:
    """An empty run book judging by the profile's thresholds, SLO and objective (none: the recording's)."""
    if profile is None:
        return RunBook()
    goal = profile.sweep.objective if profile.sweep is not None else None
    return RunBook(verdict=profile.verdict, slo=profile.slo, objective=goal)
