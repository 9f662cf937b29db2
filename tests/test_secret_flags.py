"""Secret flags are recognised by what they are, never by a substring of their name."""

from __future__ import annotations

import json
from pathlib import Path

from eagletui.core.profile.model import redact_argv
from eagletui.core.profile.redact import REDACTED, is_secret_flag

TABLE = Path(__file__).resolve().parents[1] / "eagletui" / "data" / "sglang-0.5.23-server-args.json"


def _flags(node: object, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and k.startswith("--"):
                out.add(k)
            _flags(v, out)
    elif isinstance(node, list):
        for v in node:
            _flags(v, out)
    elif isinstance(node, str) and node.startswith("--"):
        out.add(node)
    return out


def test_only_the_real_secrets_of_sglang_0_5_23_are_secret() -> None:
    flags = _flags(json.loads(TABLE.read_text()), set())
    assert len(flags) > 300
    assert sorted(f for f in flags if is_secret_flag(f)) == [
        "--admin-api-key",
        "--api-key",
        "--ssl-keyfile-password",
        "--watermark-config",  # sglang itself redacts it from its launch command: it carries the keys
    ]


def test_token_counts_are_kept_and_tokens_are_hidden() -> None:
    argv = ["python3", "--speculative-num-draft-tokens", "4", "--max-total-tokens", "9", "--hf-token", "abc"]
    assert redact_argv(argv) == [*argv[:5], "--hf-token", REDACTED]
    assert (
        is_secret_flag("--auth-token")
        and is_secret_flag("--access_key")
        and not is_secret_flag("--tokenizer-path")
    )
