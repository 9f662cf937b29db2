"""What the simulator's HTTP handlers share: the plan, the engine, the log and a few server flags.

Its own module so the handlers (:mod:`eagletui.sim.httpapi`) and the answer builders
(:mod:`eagletui.sim.metrics`, :mod:`eagletui.sim.serverinfo`) can all name it without importing each other.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from eagletui.sim.engine import Engine
from eagletui.sim.plan import Plan


class ServerState:
    def __init__(self, plan: Plan, engine: Engine, log: Any) -> None:
        self.plan = plan
        self.engine = engine
        self.log = log
        self.ready = False  # warmup done
        self.shutting_down = False
        self.started_wall = time.time()
        self.flush_pending = False
        self.gc_frozen = False


STATE = web.AppKey("state", ServerState)
