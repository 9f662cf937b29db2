"""Notification escape sequences: correct framing, and log text cannot inject its own escapes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagletui.config import NotifyChannels
from eagletui.ui.notify import bell, desktop_notify_sequence, notification_output


def test_osc9_and_osc777() -> None:
    assert desktop_notify_sequence("eagletui", "server ready") == "\x1b]9;eagletui: server ready\x07"
    assert desktop_notify_sequence("eagle;tui", "a;b", kind="osc777") == "\x1b]777;notify;eagle,tui;a;b\x07"
    assert bell() == "\a"


def test_injection_is_stripped() -> None:
    evil = "boom\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\r\nnext\x00"
    seq = desktop_notify_sequence(evil, evil)
    body = seq[len("\x1b]9;") : -1]
    assert "\x1b" not in body and "\x07" not in body and "\x9b" not in body and "\n" not in body
    assert body.startswith("boom ]52;c;ZXZpbA== [2J 31m next")


def test_osc9_never_looks_like_a_progress_report() -> None:
    assert desktop_notify_sequence("4;3;50", "") == "\x1b]9; 4;3;50\x07"


def test_long_text_is_capped() -> None:
    seq = desktop_notify_sequence("t", "x" * 10_000)
    assert len(seq) < 600 and seq.endswith("…\x07")


def test_unknown_kind() -> None:
    with pytest.raises(ValueError):
        desktop_notify_sequence("a", "b", kind="osc99")


def test_notification_output_follows_channels() -> None:
    assert notification_output(NotifyChannels(toast=True), "a", "b") == ""
    out = notification_output(NotifyChannels(bell=True, desktop=True), "a", "b", "osc777")
    assert out == "\a\x1b]777;notify;a;b\x07"


@pytest.mark.slow
@given(st.text(), st.text(), st.sampled_from(["osc9", "osc777"]))
def test_only_the_framing_is_control(title: str, body: str, kind: str) -> None:
    seq = desktop_notify_sequence(title, body, kind)
    inner = seq[2:-1]
    assert seq.startswith("\x1b]") and seq.endswith("\x07")
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in inner)
