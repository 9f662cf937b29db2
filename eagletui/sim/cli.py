"""Command line of the simulator: sglang 0.5.23's own flag table plus ``--sim-*`` options.

The sglang options are not written out here: they are built from ``eagletui/data/sglang-0.5.23-server-args.json``
(560 option strings with dest, default, type, nargs, choices, recorded from the 0.5.23 wheel's
``ServerArgs.add_cli_args``). Like sglang (``sglang/srt/server_args.py:prepare_server_args``), the parser is a
plain ``argparse.ArgumentParser(prog="sglang serve")`` with ``allow_abbrev=True``, so the simulator accepts
exactly what the real server accepts: ``--tp 8`` (unique prefix of ``--tp-size``), refuses ``--pp 2``
("ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth", exit 2)
and ``--stream-output`` ("unrecognized arguments"), and prints its errors in argparse's format on stderr.

Only :mod:`argparse`, :mod:`json` and :mod:`ast` are imported so ``python -m eagletui.sim --help`` stays fast.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from eagletui.sim.drafters import DRAFTERS

#: Whole launch ≈ 600 s at scale 1.0; the default squeezes it into ≈ 20 s.
DEFAULT_TIME_SCALE = 0.033
DEFAULT_VERSION = "0.5.23"
PROG = "sglang serve"  # sglang/srt/server_args.py: argparse.ArgumentParser(prog="sglang serve")
FLAG_TABLE = Path(__file__).resolve().parents[1] / "data" / "sglang-0.5.23-server-args.json"
SIM_GROUP = "simulator (eagletui only)"
HOSTS = ("pcie-rtx6000", "h200-nvlink")

# sglang/launch_server.py:71 — warnings.warn(..., UserWarning, stacklevel=1) in the ``__main__`` block.
LAUNCH_WARNING = (
    "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py:71: UserWarning: "
    "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.\n"
    "  Example: sglang serve --model-path <model> [options]\n"
    "  warnings.warn(\n"
)

# sglang/srt/server_args.py (deprecated argument registrations): the replacement each warning names.
DEPRECATED_NEW_FLAG = {
    "--disable-cuda-graph": "--cuda-graph-backend-{decode,prefill}=disabled",
    "--enable-dp-attention": "--attn-dp-size <dp-size>",
    "--monokernel-backend": "--enable-amd-monokernel",
}


def deprecation_message(option_string: str, new_flag: str | None) -> str:
    """``sglang/srt/arg_groups/argparse_actions.py``: ``print_deprecated_warning`` wraps the text in bold
    yellow and logs it through ``logger.warning`` *during* ``parse_args``, i.e. before ``logging.basicConfig``
    (``prepare_server_args``), so Python's last-resort handler prints the bare message, no timestamp."""
    replacement = f" Use '{new_flag}' instead." if new_flag else ""
    text = f"'{option_string}' is deprecated and will be removed in a future release.{replacement}"
    return f"\033[1;33m{text}\033[0m"


class DeprecatedStoreTrueAction(argparse.Action):
    """A retired boolean that still stores True and warns (``--disable-cuda-graph``, ``--enable-dp-attention``)."""

    def __init__(self, option_strings: list[str], dest: str, new_flag: str | None = None, **kw: Any) -> None:
        self.new_flag = new_flag
        kw.setdefault("nargs", 0)
        kw.setdefault("default", False)
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        sys.stderr.write(deprecation_message(option_string or self.dest, self.new_flag) + "\n")
        setattr(namespace, self.dest, True)


class DeprecatedStoreConstAction(argparse.Action):
    """``--monokernel-backend amd``: its one accepted value became a boolean (``enable_amd_monokernel``)."""

    def __init__(self, option_strings: list[str], dest: str, new_flag: str | None = None, **kw: Any) -> None:
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        sys.stderr.write(deprecation_message(option_string or self.dest, self.new_flag) + "\n")
        setattr(namespace, self.dest, True)


class LoRAPathAction(argparse.Action):
    """``--lora-paths``: JSON objects or plain paths (sglang/srt/arg_groups/argparse_actions.py)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        out: list[Any] = []
        for v in values or []:
            v = v.strip()
            out.append(json.loads(v) if v.startswith("{") and v.endswith("}") else v)
        setattr(namespace, self.dest, out)


# --- sglang's argparse ``type=`` callables; argparse names them in its errors ("invalid int value") --------


def human_readable_int(value: str) -> int:
    """sglang/srt/utils/common.py: ``128k`` → 128000, ``1Ki`` → 1024, plain integers as they are."""
    value = value.strip()
    si = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if m:
        number, suffix = m.groups()
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'. "
                    f"Use an integer IEC value such as '{int(Decimal(number))}{suffix}', "
                    f"or an SI value such as '{number}{suffix[0]}'."
                )
            return int(number) * iec[suffix]
        return int(Decimal(number) * si[suffix])
    try:
        return int(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"Invalid integer value: '{value}'. "
            "Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). "
            "Suffixes are case-sensitive."
        ) from e


def nullable_str(val: str) -> str | None:
    return None if not val or val == "None" else val


def loads(value: str) -> Any:
    return json.loads(value)


def json_list_type(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(
            f"Invalid JSON list: {value}. Please provide a valid JSON list."
        ) from e


def parse_cuda_graph_backend_arg(raw: str) -> str:
    """sglang/srt/model_executor/cuda_graph_config.py: the retired backend is refused before ``choices``."""
    if raw == "tc_piecewise":
        raise argparse.ArgumentTypeError("tc_piecewise was removed; select breakable, full, or disabled")
    return raw


def parse_cuda_graph_config_arg(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be JSON: {e}") from e
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(
            f"--cuda-graph-config must be a JSON object, got {type(parsed).__name__}"
        )
    return parsed


TYPES: dict[str, Callable[[str], Any] | None] = {
    "None": None,
    "str": str,
    "int": int,
    "float": float,
    "loads": loads,
    "human_readable_int": human_readable_int,
    "json_list_type": json_list_type,
    "nullable_str": nullable_str,
    "parse_cuda_graph_backend_arg": parse_cuda_graph_backend_arg,
    "parse_cuda_graph_config_arg": parse_cuda_graph_config_arg,
}


def load_table(path: Path = FLAG_TABLE) -> dict[str, dict[str, Any]]:
    """The recorded 0.5.23 flag table: option string → {dest, default (repr), type, nargs, choices, action,
    primary}, in the order ``add_cli_args`` registered them (argparse lists ambiguous candidates in it)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    actions = data["actions"]
    if not isinstance(actions, dict):
        raise ValueError(f"{path}: 'actions' is not an object")
    return actions


def _default(repr_text: str) -> Any:
    try:
        return ast.literal_eval(repr_text)
    except (ValueError, SyntaxError):
        return repr_text


def add_sglang_args(parser: argparse.ArgumentParser, table: dict[str, dict[str, Any]]) -> None:
    """Add every sglang 0.5.23 action of ``table`` to ``parser``, one ``add_argument`` per action."""
    groups: dict[str, list[str]] = {}
    for opt, spec in table.items():
        groups.setdefault(spec["primary"], []).append(opt)
    for primary, opts in groups.items():
        spec = table[primary]
        action = spec["action"]
        if action == "_HelpAction":
            continue  # argparse's own -h/--help (add_help=True)
        kw: dict[str, Any] = {"dest": spec["dest"], "default": _default(spec["default"])}
        if action == "_StoreTrueAction":
            kw["action"] = "store_true"
        elif action == "BooleanOptionalAction":
            kw["action"] = argparse.BooleanOptionalAction
            # argparse generates each ``--no-X`` itself from ``--X``.
            opts = [o for o in opts if not (o.startswith("--no-") and "--" + o[5:] in opts)]
        elif action == "DeprecatedStoreTrueAction":
            kw["action"] = DeprecatedStoreTrueAction
            kw["new_flag"] = DEPRECATED_NEW_FLAG.get(primary)
        elif action == "DeprecatedStoreConstAction":
            kw["action"] = DeprecatedStoreConstAction
            kw["new_flag"] = DEPRECATED_NEW_FLAG.get(primary)
            kw["nargs"] = spec["nargs"]
            kw["choices"] = spec["choices"]
        else:
            if action == "LoRAPathAction":
                kw["action"] = LoRAPathAction
            elif action != "_StoreAction":
                raise ValueError(f"unknown action {action} for {primary}")
            type_fn = TYPES.get(spec["type"], str)
            if type_fn is not None:
                kw["type"] = type_fn
            if spec["nargs"] is not None:
                kw["nargs"] = spec["nargs"]
            if spec["choices"] is not None:
                kw["choices"] = spec["choices"]
        if spec["dest"] == "model_path":
            # ServerArgs.model_path has no default → add_cli_args_from_dataclass marks it required.
            kw["required"] = True
            kw.pop("default")
        parser.add_argument(*opts, **kw)


def add_sim_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(SIM_GROUP)
    g.add_argument(
        "--sim-time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help="startup speed: 1.0 = the ~10 min of an 8-GPU 1T-class launch (default %(default)s ≈ 20 s)",
    )
    g.add_argument("--sim-seed", type=int, default=0, help="seed of all randomness (default 0)")
    g.add_argument(
        "--sim-draft-quality",
        type=float,
        default=None,
        help="drafter per-token acceptance probability 0..1 (default from the draft path: "
        "'bad'/'poor'/'weak' → 0.3425 ≈ accept 1.5, else 0.8527 ≈ accept 3.2)",
    )
    g.add_argument(
        "--sim-drafter",
        choices=DRAFTERS,
        default=None,
        help="a drafter of known acceptance, as shared/known-drafters builds for the real server: 'work' "
        "accepts every draft token (accept = steps + 1), 'half' accepts every draft token of a request "
        "whose prompt ends in '.' and none of one ending in '?' (other endings: half of them each way) "
        "(default: per-token acceptance by --sim-draft-quality)",
    )
    g.add_argument("--sim-speed", type=float, default=1.0, help="multiplier on token speed (default 1)")
    g.add_argument("--sim-shards", type=int, default=None, help="target checkpoint shard count")
    g.add_argument(
        "--sim-load-s",
        type=float,
        default=None,
        help="seconds (before --sim-time-scale) the target's shards take with 8 loader threads "
        "(default from the model size; one thread takes 3x)",
    )
    g.add_argument(
        "--sim-draft-context",
        type=int,
        default=None,
        help="positions the draft was trained on: past them a request's acceptance falls to a third "
        "(default: no limit)",
    )
    g.add_argument("--sim-params-b", type=float, default=None, help="model size in billions of params")
    g.add_argument("--sim-version", default=DEFAULT_VERSION, help="reported sglang version")
    g.add_argument(
        "--sim-gpu-release-s",
        type=float,
        default=0.0,
        help="with EAGLETUI_SIM_GPU_DIR: seconds the simulated GPU memory stays held after the server "
        "exits, as a slow driver release or a lingering child would (default 0)",
    )
    g.add_argument(
        "--sim-host",
        choices=HOSTS,
        default=None,
        help="host preset of the per-step cost model (default: pcie-rtx6000)",
    )


def build_parser() -> argparse.ArgumentParser:
    """sglang 0.5.23's parser (same option strings, dests, types, nargs, choices, defaults, abbreviation
    rule and errors) plus the simulator's ``--sim-*`` group. ``eagletui.remote.known_flags`` asks it which
    flags the simulator accepts."""
    p = argparse.ArgumentParser(prog=PROG, allow_abbrev=True)
    add_sglang_args(p, load_table())
    add_sim_args(p)
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.sim_time_scale <= 0:
        args.sim_time_scale = DEFAULT_TIME_SCALE
    return args


def main(argv: Sequence[str] | None = None) -> int:
    sys.stderr.write(LAUNCH_WARNING)
    sys.stderr.flush()
    args = parse_args(argv)
    from eagletui.sim.server import run_main

    return run_main(args)
