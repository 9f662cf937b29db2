"""The log-format seam (core/logs/seam.py): a format is a LogFormat subclass with three required
members; everything else is optional and defaulted, and nothing above the seam knows a server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from eagletui.commands.parse import parse_stream
from eagletui.core import events as ev
from eagletui.core.logs.formats import FORMATS
from eagletui.core.logs.registry import get_format
from eagletui.core.logs.seam import PHASE, FastPath, LaunchFacts, LogFormat, Rec
from eagletui.core.phases.interpreter import LogInterpreter

ROOT = Path(__file__).resolve().parents[1] / "eagletui"

#: Words that are one server's: none may appear in the server-neutral code.
SERVER_WORDS = re.compile(
    r"sglang|SGLang|vllm|vLLM|model_path|tp_size|speculative_algorithm|launch_server|server_args=|"
    r"Decode batch|Prefill batch|EngineCore|SpecDecoding"
)
NEUTRAL = [
    # native_crash.py names the packages a native stack's paths are shortened to (data, not wording)
    *sorted(p for p in (ROOT / "core" / "phases").glob("*.py") if p.name != "native_crash.py"),
    ROOT / "commands" / "parse.py",
    ROOT / "core" / "logs" / "outer_prefix.py",
    *sorted((ROOT / "ui").rglob("*.py")),
]


@pytest.mark.parametrize("path", NEUTRAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_server_is_named_above_the_seam(path: Path) -> None:
    hits = [
        (n, line.strip())
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SERVER_WORDS.search(line)
    ]
    assert hits == []


class TinyFormat(LogFormat):
    """A format a newcomer writes first: the three required members, nothing else."""

    name = "tiny"

    def classify(self, text: str, frame: bool = False) -> Rec:
        m = re.match(r"(\d\d:\d\d:\d\d) (.*)", text)
        if m is None:
            return Rec(text=text, msg=text, frame=frame)
        rec = Rec(text=text, msg=m.group(2), ts_text=m.group(1), prefixed=True, prefix_end=9)
        for word, tag in (
            ("args ", "server_args"),
            ("loading", "load_begin"),
            ("loaded", "load_end"),
            ("up", "ready"),
        ):
            if rec.msg.startswith(word):
                rec.kind, rec.tag = PHASE, tag
                rec.data = {"raw": rec.msg[5:]} if tag == "server_args" else {}
        return rec

    def parse_server_args(self, raw: Any) -> LaunchFacts:
        model, _, tp = str(raw).partition(" tp=")
        return LaunchFacts(model=model or None, tp=int(tp) if tp.isdigit() else None, raw={"m": model})

    def match_failure(self, msg: str):
        return ("oom", 90, "oom") if "out of memory" in msg else None

    def ts_seconds(self, ts_text: str) -> float | None:
        h, m, s = ts_text.split(":")
        return int(h) * 3600.0 + int(m) * 60 + int(s)


LOG = b"12:00:00 args llama tp=2\n12:00:01 loading\n12:00:05 loaded\n12:00:06 up\n"


def test_a_format_of_three_members_runs_every_path() -> None:
    fmt = TinyFormat()
    s = parse_stream(__import__("io").BytesIO(LOG), fmt=fmt)
    assert s["state"] == "ready"
    assert [p["name"] for p in s["phases"]] == ["launch", "load_target", "ready"]
    assert s["phases"][1]["seconds"] == 4.0
    assert s["launch"]["facts"] == {"model": "llama", "tp": 2} and s["launch"]["server"] == "tiny"
    it = LogInterpreter(launch=1, fmt=fmt)
    out = it.feed(LOG.decode()) + it.flush()
    assert any(isinstance(e, ev.ServerReady) for e in out)
    lines = [e for e in out if isinstance(e, ev.LogLine)]
    assert lines[1].prefix_end == 9 and lines[1].text[9:] == "loading"
    failed = LogInterpreter(launch=1, fmt=fmt)
    out = failed.feed("12:00:00 args m tp=1\n12:00:01 CUDA out of memory\n") + failed.flush()
    assert [e.kind for e in out if isinstance(e, ev.ServerFailed)] == ["oom"]


def test_a_fast_path_without_a_bulk_pattern_turns_the_bulk_path_off() -> None:
    """A type-correct scan_re that returns None must not crash parse (it used to need the attribute)."""

    class NoBulk(FastPath):
        def scan_re(self, sample: str, binary: bool = False) -> Any:
            return None

    class WithFast(TinyFormat):
        fast = NoBulk()

    s = parse_stream(__import__("io").BytesIO(LOG * 3), fmt=WithFast())
    assert s["state"] == "ready"


def test_the_registry() -> None:
    assert [f.name for f in FORMATS] == ["sglang", "vllm"]
    assert get_format() is FORMATS[0] and get_format("vllm") is FORMATS[1]
    with pytest.raises(KeyError):
        get_format("tgi")
    with pytest.raises(TypeError):
        LogFormat()  # type: ignore[abstract]
