"""Compatibility name: SGLang's line classifier lives in :mod:`eagletui.core.formats.sglang.lines`."""

from eagletui.core.formats.sglang.lines import *  # noqa: F403
from eagletui.core.formats.sglang.lines import classify, parse_decode, parse_prefill, split_glued
from eagletui.core.logformat import Rec

__all__ = ["Rec", "classify", "parse_decode", "parse_prefill", "split_glued"]
