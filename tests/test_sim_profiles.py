"""Every shipped profile (and every value each of its toggles can take) launches under sglang 0.5.23's
own argument rules, as the simulator's parser, built from the real 0.5.23 flag table, applies them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from eagletui.core.profile.load import load_profile
from eagletui.sim.cli import build_parser

ALL_PROFILES = sorted((Path(__file__).resolve().parents[1] / "eagletui" / "profiles").glob("*.toml"))
#: the shipped SGLang profiles (a vLLM profile meets vLLM's parser: test_vllm_profiles_parse below)
PROFILES = [p for p in ALL_PROFILES if load_profile(p).server == "sglang"]
VLLM_PROFILES = [p for p in ALL_PROFILES if load_profile(p).server == "vllm"]


def _server_args(argv: list[str]) -> list[str]:
    return argv[argv.index("-m") + 2 :]


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(argv)
    except SystemExit as e:  # argparse's error already went to stderr
        raise AssertionError(f"sglang 0.5.23 refuses {argv}") from e


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_profile_and_toggles_parse_under_0523(path: Path) -> None:
    prof = load_profile(path)
    parser = build_parser()
    ns = _parse(parser, _server_args(prof.argv()))
    assert ns.model_path and ns.tp_size >= 1
    if path.stem == "demo":
        # the demo uses full names only (`--tp-size`, not the abbreviation `--tp` that sglang also
        # accepts), so it launches whatever flag check the UI applies
        known = {o for a in parser._actions for o in a.option_strings}
        names = set(prof.args) | {t.name for t in prof.toggles if t.kind == "arg"}
        assert names <= known, sorted(names - known)
    for toggle in prof.toggles:
        if toggle.kind != "arg":
            continue
        for value in toggle.options():
            args = dict(prof.args)
            args[toggle.name] = value
            _parse(parser, _server_args(prof.argv(args)))


@pytest.mark.parametrize("path", VLLM_PROFILES, ids=[p.stem for p in VLLM_PROFILES])
def test_vllm_profiles_parse_under_the_vllm_simulators_parser(path: Path) -> None:
    from eagletui.sim.vllm import build_parser as vllm_parser

    prof = load_profile(path)
    parser = vllm_parser()
    argv = prof.argv()
    ns = parser.parse_args(argv[argv.index("serve") + 1 :])
    assert ns.model and ns.speculative_config
    for toggle in prof.toggles:
        if toggle.kind != "arg":
            continue
        for value in toggle.options():
            args = dict(prof.args)
            args[toggle.name] = value
            argv = prof.argv(args)
            parser.parse_args(argv[argv.index("serve") + 1 :])


def test_parser_refuses_what_0523_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for argv, message in (
        (["--pp", "2"], "ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size"),
        (["--cuda-graph-bs", "1"], "ambiguous option: --cuda-graph-bs could match --cuda-graph-bs-decode,"),
        (["--stream-output"], "unrecognized arguments: --stream-output"),
        (["--cuda-graph-backend-prefill", "tc_piecewise"], "tc_piecewise was removed"),
        (["--context-length", "1.5Ki"], "Decimals are not allowed with IEC suffixes"),
    ):
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(["--model-path", "m", *argv])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err
    ns = parser.parse_args(["--model-path", "m", "--tp", "8", "--dp", "2", "--context-length", "128k"])
    assert (ns.tp_size, ns.dp_size, ns.context_length) == (8, 2, 128000)
    assert ns.cuda_graph_max_bs_decode is None and ns.max_prefill_tokens == 16384


def test_sim_hints_name_flags_that_exist() -> None:
    """The simulator's own OOM/memory hints recommend flags the 0.5.23 parser accepts by their full name."""
    import re

    from eagletui.sim import crashes

    text = crashes.CAPTURE_SOLUTIONS + crashes.tb_not_enough_memory(0.9) + crashes.tb_oom_capture(0)
    flags = set(re.findall(r"--[a-z][a-z0-9-]+", text))
    assert {"--mem-fraction-static", "--cuda-graph-max-bs-decode", "--cuda-graph-backend-decode"} <= flags
    known = {o for a in build_parser()._actions for o in a.option_strings}
    assert flags <= known, flags - known
