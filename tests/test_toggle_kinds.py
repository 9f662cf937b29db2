"""Toggle kinds (core/profile/toggles.py): one object per kind owns its key prefix, the snapshot section,
how a value is written and whether a name is a secret; every key split goes through split_key."""

from __future__ import annotations

import pytest

from eagletui.core.profile.model import Profile, ProfileError, Toggle, config_diff, format_diff
from eagletui.core.profile.redact import Redactor
from eagletui.core.profile.toggles import ARG, ENV, TOGGLE_KINDS, split_key


def test_keys_split_into_their_kind() -> None:
    assert split_key("env:NCCL_ALGO") == (ENV, "NCCL_ALGO")
    assert split_key("arg:--tp") == (ARG, "--tp")
    assert split_key("target") == (None, "target")
    assert split_key("gpu:0") == (None, "gpu:0")  # a colon alone makes no kind
    assert Toggle(kind="env", name="NCCL_ALGO").key == "env:NCCL_ALGO"
    assert set(TOGGLE_KINDS) == {"env", "arg"}


def test_rendering_and_stored_values() -> None:
    assert ENV.render("NCCL_ALGO", "Tree") == "NCCL_ALGO=Tree" and ARG.render("--tp", 8) == "--tp 8"
    assert ENV.stored(True) == "1" and ENV.stored(0.5) == "0.5" and ENV.stored(8.0) == "8.0"
    assert ARG.stored(8) == 8 and ARG.stored(True) is True
    p = Profile(args={"--tp": 8}, env={"A": "x"}).with_values({"env:NCCL_ALGO": "Tree", "arg:--tp": None})
    assert p.env == {"A": "x", "NCCL_ALGO": "Tree"} and "--tp" not in p.args
    with pytest.raises(ProfileError):
        Profile().with_values({"gpu:0": 1})


def test_diffs_and_secrets_by_kind() -> None:
    old = {"args": {"--tp": 8}, "env": {"NCCL_ALGO": "Ring"}}
    new = {"args": {"--tp": 4}, "env": {"NCCL_ALGO": "Tree"}}
    diff = config_diff(old, new)
    assert diff == {"arg:--tp": [8, 4], "env:NCCL_ALGO": ["Ring", "Tree"]}
    assert format_diff(diff) == "--tp 8→4 NCCL_ALGO Ring→Tree"
    assert ENV.is_secret("HF_TOKEN") and not ENV.is_secret("NCCL_ALGO")
    assert ARG.is_secret("--api-key") and not ARG.is_secret("--speculative-num-draft-tokens")
    scrubbed = Redactor().value({"env:HF_TOKEN": "hf_abcdefghijklmnop", "arg:--tp": 8})
    assert scrubbed["env:HF_TOKEN"] != "hf_abcdefghijklmnop" and scrubbed["arg:--tp"] == 8
