"""A key press reaches the bindings in one turn of the event loop when nothing on its way looks at it.

Textual hands a key to the focused widget's message queue; unhandled there, it bubbles up one queue at
a time (the widget, each container, the screen) until the app checks the bindings. Each hop waits for
a turn of the event loop, and under a log burst every turn also feeds a piece of the tail and often
paints a frame: with the log view focused several levels deep, a key waited 100-200 ms before its
action even started (``benchmarks/ui_load.py``, 2-core machine).

Those hops only pass the key on when no widget on the way has a key handler of its own (``_on_key`` /
``on_key`` / ``handle_key`` overridden, a ``key_*`` method, an ``@on(Key)``). Then the app runs, at
once, what the last hop would have run: the bindings from the focused widget up to the app, in the same
order, then the app's own ``key_*`` method. A path with a handler (the search line's ``Input``) takes
Textual's way, unchanged. Part of :mod:`eagletui.ui.textual_patches`' switch.
"""

from __future__ import annotations

import contextlib
from functools import cache

from textual import events
from textual._dispatch_key import dispatch_key
from textual.app import App
from textual.dom import DOMNode, NoScreen
from textual.message_pump import MessagePump
from textual.widget import Widget

_ENTRIES = ("on_event", "_on_message", "_dispatch_message")


@cache
def _key_methods(cls: type[DOMNode]) -> frozenset[str] | None:
    """The key names this class has ``key_*`` methods for; None if it looks at every key (or is no
    widget): ``_on_key`` / ``handle_key`` overridden, an ``on_key``, an ``@on(Key)`` handler, or its
    own entry for every message (``on_event``, ``_on_message``, ``_dispatch_message``)."""
    if not issubclass(cls, Widget):
        return None
    if getattr(cls, "_on_key", None) is not Widget._on_key or getattr(cls, "handle_key", None) is not (
        Widget.handle_key
    ):
        return None
    if getattr(cls, "on_key", None) is not None:
        return None
    if any(getattr(cls, name) is not getattr(MessagePump, name) for name in _ENTRIES):
        return None  # every message goes through its own code first
    if any(
        issubclass(message, events.Key)
        for klass in cls.__mro__
        for message in (klass.__dict__.get("_decorated_handlers") or {})
    ):
        return None
    return frozenset(name.split("key_", 1)[1] for name in dir(cls) if name.startswith(("key_", "_key_")))


def passes_on(cls: type[DOMNode], event: events.Key) -> bool:
    """True when a node of this class does nothing with this key but hand it to its parent."""
    names = _key_methods(cls)
    return names is not None and names.isdisjoint(event.name_aliases)


def direct_path(app: App, event: events.Key) -> bool:
    """True when every node from the focused widget (or the screen) up to the screen passes the key on."""
    try:
        screen = app.screen
    except NoScreen:
        return False
    node: DOMNode | None = app.focused or screen
    while node is not None:
        if not passes_on(type(node), event):
            return False
        if node is screen:
            return True
        node = node.parent
    return False  # the focused widget is not on the current screen


async def deliver(app: App, event: events.Key) -> None:
    """What Textual's ``App.on_event`` and the key's bubbling up to ``App._on_key`` do, without the hops
    (call only when :func:`direct_path` holds)."""
    if not app.app_focus:
        app.app_focus = True
    screen = app.screen
    if screen.maximized is not None and event.key == "escape" and app.escape_to_minimize:
        screen.minimize()
        return
    if app.focused:
        with contextlib.suppress(NoScreen):
            screen._clear_tooltip()
    if await app._check_bindings(event.key, priority=True):
        return
    event._set_forwarded()
    if not await app._check_bindings(event.key):
        await dispatch_key(app, event)
