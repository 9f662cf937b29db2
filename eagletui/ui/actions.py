"""Every key of the main screen in one table: binding id, default key, action, label, description.

One table feeds the bindings, the key bar, F1 help, the command palette and the keymap (``[keymap]
id = "key"`` in config.toml), so a new action is one row here plus an ``action_*`` method on
:class:`~eagletui.ui.screens.main.MainScreen`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode

ACTIONS: list[tuple[str, str, str, str, str]] = [
    # (binding id, default key, action, footer label, description)
    ("relaunch", "r", "relaunch", "Relaunch", "Relaunch the server with the running config"),
    ("stop", "s", "stop", "Stop", "Stop the server eagletui started"),
    ("bench", "b", "bench", "Bench", "Run a benchmark"),
    (
        "decide",
        "D",
        "decide",
        "Decide",
        "Repeat the no-spec benchmark until vs-no-spec leaves its noise (limit: sweep.decide_s)",
    ),
    ("apply", "a", "apply", "Apply", "Apply pending toggles: preflight, stop, relaunch"),
    ("diff", "d", "diff", "Diff", "Show pending changes (running vs pending)"),
    ("pin", "m", "pin_baseline", "Baseline", "Pin the selected run (or the latest) as baseline"),
    (
        "history",
        "H",
        "history",
        "History",
        "Earlier sessions' runs on this target and model: pin one as baseline",
    ),
    (
        "frontier",
        "v",
        "frontier",
        "Frontier",
        "Frontier: tok/s per GPU vs decode tok/s per user per launch config, the SLO answer",
    ),
    ("profile_step", "P", "profile_step", "Profile", "Profile a few decode steps: GPU time by category"),
    ("search", "slash", "search", "Search", "Search the log"),
    (
        "next_launch",
        "n",
        "next_launch",
        "Next launch",
        "Stage the launch the ranking puts first: its prediction, band and diff; a applies and benchmarks it"
        " (while searching the log: the next hit)",
    ),
    ("search_next", "f3", "search_next", "Next hit", "Next search hit"),
    ("search_prev", "N", "search_prev", "Prev hit", "Previous search hit"),
    ("follow", "f", "follow", "Follow", "Follow the log tail"),
    ("errors", "e", "filter('errors')", "Errors", "Log filter: errors and warnings only"),
    ("phase_lines", "p", "filter('phase')", "Phases", "Log filter: phase lines"),
    ("decode_lines", "c", "filter('decode')", "Decode", "Log filter: decode/prefill lines"),
    ("all_lines", "0", "filter('all')", "All lines", "Log filter: everything"),
    ("rank_filter", "k", "rank_filter", "Rank", "Log filter: cycle through ranks (TP0, TP1, …, all)"),
    (
        "copy",
        "y",
        "copy_log",
        "Copy",
        "Copy the log selection (or the search hit, or the visible lines) to the clipboard",
    ),
    ("theme", "t", "app.cycle_theme", "Theme", "Next theme"),
    ("tab_log", "1", "tab('log')", "Log", "Log tab"),
    ("tab_charts", "2", "tab('charts')", "Charts", "Charts tab (narrow terminals)"),
    ("tab_tune", "3", "tab('tune')", "Tune", "Tune tab"),
    ("tab_runs", "4", "tab('runs')", "Runs", "Runs tab"),
    ("tab_queue", "5", "tab('queue')", "Queue", "Sweep queue tab"),
    ("replay_pause", "space", "replay_pause", "Pause", "Replay: pause / resume"),
    ("replay_faster", "plus,equals_sign", "replay_speed(2)", "Faster", "Replay: twice as fast"),
    ("replay_slower", "minus", "replay_speed(0.5)", "Slower", "Replay: half as fast"),
    ("replay_back", "left", "replay_seek(-10)", "-10 s", "Replay: back 10 s"),
    ("replay_forward", "right", "replay_seek(10)", "+10 s", "Replay: forward 10 s"),
    (
        "replay_prev",
        "left_square_bracket",
        "replay_step(-1)",
        "Prev",
        "Replay: previous launch or config change",
    ),
    ("replay_next", "right_square_bracket", "replay_step(1)", "Next", "Replay: next launch or config change"),
    ("replay_start", "home", "replay_to_end(0)", "Start", "Replay: to the start"),
    ("replay_end", "end", "replay_to_end(1)", "End", "Replay: to the end"),
    ("export", "E", "export", "Export", "Export the runs as Markdown to the sessions dir"),
    ("help", "f1,question_mark", "help", "Help", "Help: all keys"),
    ("quit", "q", "app.quit_app", "Quit", "Quit (the server keeps running, except in the demo)"),
]

FOOTER_SHOWN = {
    "relaunch",
    "stop",
    "bench",
    "apply",
    "diff",
    "pin",
    "search",
    "follow",
    "theme",
    "replay_pause",
    "replay_faster",
    "replay_slower",
    "help",
    "quit",
}

#: Bound ahead of the focused pane: in a replay ←/→ and Home/End move the replay from any tab. Their
#: actions raise SkipAction outside a replay (or in a text box), so the pane gets the key as before.
PRIORITY = {"replay_back", "replay_forward", "replay_start", "replay_end"}

#: Actions that need a capability of the driver: hidden from the key bar when it lacks it (a replay
#: cannot launch or benchmark; only a replay can pause or change speed).
NEEDS_LAUNCH = frozenset({"relaunch", "stop", "apply", "next_launch"})
NEEDS_BENCH = frozenset({"bench", "decide"})
NEEDS_REPLAY = frozenset(
    {
        "replay_pause",
        "replay_speed(2)",
        "replay_speed(0.5)",
        "replay_seek(-10)",
        "replay_seek(10)",
        "replay_step(-1)",
        "replay_step(1)",
        "replay_to_end(0)",
        "replay_to_end(1)",
    }
)


def hidden_actions(*, can_launch: bool, can_bench: bool, is_replay: bool) -> frozenset[str]:
    """The key bar's actions that would only answer "not available" with this driver."""
    hidden: set[str] = set()
    if not can_launch:
        hidden |= NEEDS_LAUNCH
    if not can_bench:
        hidden |= NEEDS_BENCH
    if not is_replay:
        hidden |= NEEDS_REPLAY
    return frozenset(hidden)


#: Keys of the panes, listed in F1 help after the table above (bound by the widgets themselves).
PANE_KEYS: list[tuple[str, str, str]] = [
    ("←/→ enter", "Tune tab: step the selected toggle", "tune.next"),
    ("x", "Tune tab: discard pending changes", "tune.discard"),
    ("F", "Tune tab: stage the profile file's values (a reattached server runs another config)", "tune.file"),
    ("enter", "Runs tab: run details", ""),
    ("w x R A < >", "Queue tab: start/resume the sweep, skip, retry, abort, reorder", "queue.start"),
    ("end", "Log: follow the tail", "log.follow"),
    ("ctrl+p", "Command palette", ""),
]

_KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "space": "Space",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "left": "←",
    "right": "→",
    "home": "Home",
    "end": "End",
    "f1": "F1",
}


def bindings() -> list[BindingType]:
    return [
        Binding(key, action, label, id=bid, show=bid in FOOTER_SHOWN, tooltip=desc, priority=bid in PRIORITY)
        for bid, key, action, label, desc in ACTIONS
    ]


def key_names(keys: str) -> str:
    """``f1,question_mark`` → ``F1 / ?``: what the user presses, not Textual's key ids."""
    return " / ".join(_KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def help_rows(keymap: dict[str, str]) -> list[tuple[str, str, str]]:
    """(keys, description, binding id) for F1 help, with the user's remapped keys."""
    rows = [(key_names(keymap.get(bid, key)), desc, bid) for bid, key, _action, _label, desc in ACTIONS]
    return rows + PANE_KEYS


class EagleCommands(Provider):
    """Every action in the command palette, so nothing needs a key to be reachable."""

    async def discover(self) -> Hits:
        """The palette with nothing typed lists our actions (not only Textual's built-ins)."""
        app = self.app
        for bid, key, action, _label, desc in ACTIONS:
            yield DiscoveryHit(desc, _runner(app, action), help=f"key: {key_names(key)}  id: {bid}")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for bid, key, action, _label, desc in ACTIONS:
            score = matcher.match(desc)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(desc),
                    _runner(app, action),
                    help=f"key: {key_names(key)}  id: {bid}",
                )


def _runner(app: App, action: str) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        # The actions live on the main screen (the default screen), whichever screen is on top.
        target: DOMNode = app.default_screen
        await app.run_action(action, target)

    return run
