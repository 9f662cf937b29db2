"""Recording: round trip of every event type, file mode, naming, and that no secret reaches the disk."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.events import ALL_EVENT_TYPES, Event
from eagletui.core.profile.redact import Redactor
from eagletui.session.format import FORMAT_NAME, FORMAT_VERSION, read_session, session_filename, target_slug
from eagletui.session.record import Recorder

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # tests/conftest.py


def _sample_value(type_str: str, name: str) -> Any:
    t = type_str.split("|")[0].strip()
    if t.startswith("dict"):
        return {"k": 1, "nested": {"x": [1, 2]}}
    if t.startswith("tuple"):
        if name == "gpus":
            return ({"index": 0, "name": "H100"},)
        if t.startswith("tuple[dict"):
            return ({"k": 1, "name": f"{name}-value"},)
        inner = t[len("tuple[") :].split(",", 1)[0].strip()
        return {"float": (0.5, 0.25), "int": (1, 2)}.get(inner, ("python", "-m", "sglang.launch_server"))
    return {"str": f"{name}-value", "int": 7, "float": 1.25, "bool": True}.get(t, f"{name}-value")


def sample_event(cls: type[Event], i: int = 0) -> Event:
    """One instance of ``cls`` with every field set, built from the field types so new event types
    are covered without editing this test."""
    kwargs: dict[str, Any] = {"wall": 1_700_000_000.0 + i, "mono": 100.0 + i}
    for f in dataclasses.fields(cls):
        if f.name not in kwargs:
            kwargs[f.name] = _sample_value(str(f.type), f.name)
    return cls(**kwargs)


def test_round_trip_every_event_type(tmp_path: Path) -> None:
    originals = [sample_event(cls, i) for i, cls in enumerate(ALL_EVENT_TYPES)]
    path = tmp_path / "s.jsonl"
    with Recorder(path, target="gpu-box", profile_name="demo") as rec:
        for e in originals:
            rec.write(e)
    header, loaded, warnings = read_session(path)
    assert warnings == []
    assert header["format"] == FORMAT_NAME and header["version"] == FORMAT_VERSION
    assert header["target"] == "gpu-box" and header["profile"] == "demo"
    assert dt.datetime.fromisoformat(header["created"])
    assert "eagletui" in header
    assert loaded == originals
    assert {type(e) for e in loaded} == set(ALL_EVENT_TYPES)


def test_file_mode_0600_and_exclusive(tmp_path: Path) -> None:
    path = tmp_path / "new" / "s.jsonl"
    Recorder(path, target="t", profile_name="p").close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(FileExistsError):
        Recorder(path, target="t", profile_name="p")


def test_each_line_is_on_disk_as_written(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rec = Recorder(path, target="t", profile_name="p")
    rec.write(ev.LogLine(text="hello", wall=1.0, mono=1.0))
    # Not closed: a crash now must still leave a complete, loadable file.
    _, events, warnings = read_session(path)
    assert [e.text for e in events] == ["hello"] and warnings == []
    rec.close()
    rec.write(ev.LogLine(text="after close"))  # silently ignored during shutdown
    assert len(read_session(path)[1]) == 1


def test_create_names_and_collisions(tmp_path: Path) -> None:
    now = dt.datetime(2025, 3, 4, 5, 6, 7)
    a = Recorder.create(tmp_path, target="me@gpu box:22", profile_name="p", now=now)
    b = Recorder.create(tmp_path, target="me@gpu box:22", profile_name="p", now=now)
    assert a.path.name == "20250304-050607-me-gpu-box-22.jsonl"
    assert b.path.name == "20250304-050607-me-gpu-box-22-2.jsonl"
    a.close()
    b.close()
    assert session_filename("", now) == "20250304-050607-local.jsonl"
    assert target_slug("../../etc") == "etc"


SECRET_HF = "hf_AbCdEfGhIjKlMnOpQrSt"
SECRET_PLAIN = "s3cr3t-plain-value"  # no token shape: only caught because the profile says it is secret
SECRET_API = "my-api-key-9876"
SECRET_ENV_CHANGE = "newPassw0rdValue"
SECRET_GH = "ghp_1234567890abcdefXYZ"
SECRET_SK = "sk-proj-abcdefgh12345678"
SECRET_BEARER = "eyJhbGciOiJIUzI1NiJ9.payload.sig"


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rec = Recorder(path, target="box", profile_name="p", secrets=[SECRET_PLAIN])
    rec.write(
        ev.LaunchStarted(
            launch=1,
            target="box",
            command=(
                "python",
                "-m",
                "sglang.launch_server",
                "--api-key",
                SECRET_API,
                f"--hf-token={SECRET_HF}",
            ),
            config={
                "env": {"HF_TOKEN": SECRET_HF, "MY_PASSWORD": SECRET_PLAIN, "NCCL_ALGO": "Tree"},
                "args": {
                    "--api-key": SECRET_API,
                    "--tokenizer-path": "/models/tok",
                    "--max-total-tokens": 4096,
                },
                "command": ["env", f"HF_TOKEN={SECRET_HF}", "python"],
            },
        )
    )
    rec.write(
        ev.ConfigChanged(
            changes={"env:DB_PASSWORD": [None, SECRET_ENV_CHANGE], "env:NCCL_ALGO": ["Ring", "Tree"]}
        )
    )
    rec.write(ev.LogLine(text=f"server_args=ServerArgs(model_path='/m', api_key='{SECRET_API}', tp_size=2)"))
    rec.write(ev.LogLine(text=f"echo {SECRET_ENV_CHANGE} and {SECRET_PLAIN}"))
    rec.write(ev.LogLine(text=f"Authorization: Bearer {SECRET_BEARER} token={SECRET_GH} key {SECRET_SK}"))
    rec.write(ev.LogLine(text=f'launch --api-key {SECRET_API}x --api-key="{SECRET_API}y"'))
    rec.write(ev.LaunchDetected(args={"api_key": SECRET_API, "tokenizer_path": "/models/tok"}))
    rec.write(ev.Notice(message=f"export HF_TOKEN={SECRET_HF}"))
    rec.close()

    raw = path.read_text()
    for s in (SECRET_HF, SECRET_PLAIN, SECRET_API, SECRET_ENV_CHANGE, SECRET_GH, SECRET_SK, SECRET_BEARER):
        assert s not in raw, s
    # Things that only look like secrets by name survive: the recording must stay useful.
    assert "/models/tok" in raw and "4096" in raw and '"Tree"' in raw
    _, events, warnings = read_session(path)
    assert warnings == []
    launch = events[0]
    assert isinstance(launch, ev.LaunchStarted)
    assert launch.config["env"]["HF_TOKEN"] == "***" and launch.config["env"]["NCCL_ALGO"] == "Tree"
    assert launch.command[3:5] == ("--api-key", "***")
    assert events[1].changes["env:DB_PASSWORD"] == [None, "***"]
    assert events[1].changes["env:NCCL_ALGO"] == ["Ring", "Tree"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Decode batch. #running-req: 3, #token: 1234, token usage: 0.05, gen throughput (token/s): 99.1",
            "Decode batch. #running-req: 3, #token: 1234, token usage: 0.05, gen throughput (token/s): 99.1",
        ),
        (
            "max_total_num_tokens=65536, chunked_prefill_size=8192",
            "max_total_num_tokens=65536, chunked_prefill_size=8192",
        ),
        ("--tokenizer-path /x --max-new-tokens 5", "--tokenizer-path /x --max-new-tokens 5"),
        ("HF_TOKEN=abcd1234 run", "HF_TOKEN=*** run"),
        ("--api-key=abc123", "--api-key=***"),
        ("curl -H 'Authorization: Bearer abc.def'", "curl -H 'Authorization: Bearer ***'"),
    ],
)
def test_redactor_text(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


def test_recorded_lines_are_plain_json(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Recorder(path, target="t", profile_name="p") as rec:
        rec.write(ev.LogLine(text="ünïcode ✓"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert json.loads(lines[1])[1] == "ünïcode ✓"  # a compact log row: [dmono_us, text, ...]
    assert "ünïcode ✓" in lines[1]  # UTF-8 as is, not \u escapes


def test_create_defaults_to_data_dir(tmp_path: Path) -> None:
    with Recorder.create(target="box", profile_name="p") as rec:
        assert rec.path.parent == tmp_path / "data" / "sessions"


def test_server_args_line_keeps_its_shape() -> None:
    line = "ServerArgs(model_path='m', api_key=None, hf_token='hf_abcdefghijk12', admin_api_key='zz9z', tp_size=2)"
    assert (
        Redactor().text(line)
        == "ServerArgs(model_path='m', api_key=None, hf_token='***', admin_api_key='***', tp_size=2)"
    )
