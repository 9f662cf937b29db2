"""Problems in a profile that loads fine but would fail later: a flag the server refuses, a toggle whose
range is empty. Each comes with ``file:line:col`` so it can be fixed at once.

Loading only checks that the file is well formed. These checks need the server's flag table (argparse's
rule, :mod:`eagletui.core.servers.flag_rule`) or look at toggles as a whole, and ``eagletui profile check`` is
where a user asks for them, before a ten-minute launch rather than during it. Every flag that can reach
the argv counts: ``[server.args]`` and the ``arg`` of each toggle.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.profile.model import Profile, ProfileError, normalize_flag
from eagletui.core.servers.flag_rule import FlagTable, check_server_flags, check_values
from eagletui.core.servers.spec import ADAPTIVE, adaptive_fallback, adaptive_fallback_text
from eagletui.core.tomlpos import loads as toml_loads
from eagletui.core.tomlpos import locate, locate_in_array, syntax_errors


@dataclass
class Lint:
    """Errors make ``profile check`` fail; warnings and notes are printed."""

    errors: list[ProfileError] = field(default_factory=list)
    warnings: list[ProfileError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    flags_checked: int = 0


def toggle_position(text: str, index: int, key: str) -> tuple[int | None, int | None]:
    """Line/column of ``key`` inside the ``index``-th ``[[toggles]]`` block (else anywhere)."""
    return locate_in_array(text, ("toggles", "toggle"), index, key)


def _arg_keys(text: str) -> dict[str, str]:
    """Normalised flag → the key as written under ``[server.args]`` (``tp`` for ``--tp``)."""
    try:
        data = toml_loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    raw = data.get("server", {}).get("args", {}) if isinstance(data.get("server"), dict) else {}
    out: dict[str, str] = {}
    for key in raw if isinstance(raw, dict) else {}:
        try:
            out[normalize_flag(key)] = key
        except ProfileError:
            continue
    return out


def toggle_problems(prof: Profile, text: str) -> list[ProfileError]:
    """Numeric toggles whose range offers nothing to choose from (``max < min``, ``step <= 0``)."""
    out: list[ProfileError] = []
    for i, t in enumerate(prof.toggles):
        if t.type not in ("int", "float"):
            continue
        if t.min is not None and t.max is not None and t.max < t.min:
            line, col = toggle_position(text, i, "max")
            out.append(
                ProfileError(
                    f"toggle {t.name}: max = {t.max} is below min = {t.min} (no value to choose)",
                    prof.path,
                    line,
                    col,
                )
            )
        if t.step is not None and t.step <= 0:
            line, col = toggle_position(text, i, "step")
            out.append(
                ProfileError(f"toggle {t.name}: step = {t.step} must be above 0", prof.path, line, col)
            )
    return out


def value_problems(prof: Profile, text: str) -> list[ProfileError]:
    """A profile value its own toggle refuses (``num-draft-tokens = 6`` under a toggle of min 2 / max 5,
    a choice the toggle does not list): the Tune tab would show a running value it cannot step back to,
    and the first step would lose it. Located at the value, naming the toggle's line."""
    out: list[ProfileError] = []
    keys = _arg_keys(text)
    for i, t in enumerate(prof.toggles):
        if t.type in ("bool", "str"):
            continue
        if t.kind == "arg":
            value: Any = prof.args.get(t.name)
            key, section = keys.get(t.name, t.name[2:]), "server.args"
        else:
            value, key, section = prof.env.get(t.name), t.name, "server.env"
        if value is None or value is False or isinstance(value, list):
            continue
        try:
            t.validate(value)
        except ValueError as exc:
            toggle_line, _ = toggle_position(text, i, "arg" if t.kind == "arg" else "env")
            at = f" (line {toggle_line})" if toggle_line is not None else ""
            reason = str(exc).removeprefix(f"{t.name}: ")
            out.append(
                ProfileError(
                    f"{section}.{key} = {value!r} is outside its own toggle{at}: {reason}; "
                    "widen the toggle or change the value",
                    prof.path,
                    *locate(text, key, section),
                )
            )
    return out


def flag_problems(
    prof: Profile, text: str, table: FlagTable | None, version: str | None = None
) -> tuple[list[ProfileError], list[ProfileError], list[str], int]:
    """argparse's verdict on every flag of ``[server.args]`` and of the toggles, located in the file.
    Nothing is checked for a server whose parser is unknown here (the version notes are SGLang's)."""
    if table is None and prof.kind.flag_module != "sglang":
        return [], [], [], 0
    where: dict[str, tuple[int | None, int | None]] = {}
    keys = _arg_keys(text)
    for flag in prof.args:
        where[flag] = locate(text, keys.get(flag, flag[2:]), "server.args")
    for i, t in enumerate(prof.toggles):
        if t.kind == "arg" and t.name not in where:
            where[t.name] = toggle_position(text, i, "arg")
    errors: list[ProfileError] = []
    warnings: list[ProfileError] = []
    notes: list[str] = []
    for flag, (line, col) in where.items():
        report = check_server_flags([flag], table, version)
        if not report.errors and flag in prof.args:
            report.errors += check_values({flag: prof.args[flag]}, table, version)
        errors += [ProfileError(m, prof.path, line, col) for m in report.errors]
        warnings += [ProfileError(m, prof.path, line, col) for m in report.warnings]
        notes += report.notes
    for i, t in enumerate(prof.toggles):
        # Every value the toggle can put on the argv must be one the server takes.
        if t.kind != "arg" or t.type == "bool":
            continue
        msgs = check_values({t.name: [v for v in t.options() if v is not None]}, table, version)
        key = "choices" if t.type == "choice" else "min"
        errors += [ProfileError(m, prof.path, *toggle_position(text, i, key)) for m in msgs]
    return errors, warnings, notes, len(where)


def lint_profile(prof: Profile, text: str, table: FlagTable | None, version: str | None = None) -> Lint:
    lint = Lint()
    flag_errors, lint.warnings, lint.notes, lint.flags_checked = flag_problems(prof, text, table, version)
    lint.errors = toggle_problems(prof, text) + value_problems(prof, text) + flag_errors
    lint.errors.sort(key=lambda e: (e.line or 0, e.col or 0))
    missing = model_path_warning(prof, text)
    if missing is not None:
        lint.warnings.insert(0, missing)
    fallback = adaptive_warning(prof, text)
    if fallback is not None:
        lint.warnings.append(fallback)
    return lint


def adaptive_warning(prof: Profile, text: str) -> ProfileError | None:
    """``--speculative-adaptive`` on a launch SGLang runs with static steps (a ``topk`` other than 1, …):
    the server only warns, so say it here, at the flag (:func:`~eagletui.core.servers.spec.adaptive_fallback`,
    the preflight's check too)."""
    reason = adaptive_fallback(prof.args)
    if reason is None:
        return None
    keys = _arg_keys(text)
    line, col = locate(text, keys.get(ADAPTIVE, ADAPTIVE[2:]), "server.args")
    return ProfileError(adaptive_fallback_text(reason), prof.path, line, col)


def model_path_warning(prof: Profile, text: str) -> ProfileError | None:
    """SGLang refuses to start without ``--model-path`` (argparse: required): say so before a launch."""
    if any(f in prof.args for f in ("--model-path", "--model")):
        return None
    line, col = locate(text, "args", "server") if "[server.args]" in text else (None, None)
    return ProfileError(
        "server.args has no model-path: the server refuses to start without --model-path",
        prof.path,
        line,
        col,
    )


# -- every load error, not only the first ---------------------------------------------------------
#
# ``load_profile`` stops at the first problem (a profile that does not load is not used). ``profile
# check`` is where a user fixes a file, so it reports all of them: the file is loaded piece by piece
# (the top level, [target], [server] without its tables, each server.args and server.env entry, each
# toggle, [bench], [verdict]), every piece that fails is reported and left out, and what is left is
# loaded whole for the problems between pieces ([sweep], a flag given twice).

MAX_LOAD_ERRORS = 50


def _pieces(data: dict[str, Any]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """(where the piece sits in ``data``, a profile dict holding just that piece): every key of the
    top level and of each table on its own, every toggle on its own."""
    tables = ("target", "server", "toggles", "toggle", "bench", "verdict", "sweep", "slo")
    out: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    for k, v in data.items():
        if k not in tables:
            out.append(((k,), {k: v}))
    for section in ("target", "server", "bench", "verdict", "slo"):
        if section not in data:
            continue
        body = data[section]
        if not isinstance(body, dict):
            out.append(((section,), {section: body}))
            continue
        for k, v in body.items():
            if section == "server" and k in ("args", "env") and isinstance(v, dict):
                for name, value in v.items():
                    out.append(((section, k, name), {section: {k: {name: value}}}))
            else:
                out.append(((section, k), {section: {k: v}}))
    for name in ("toggles", "toggle"):
        toggles = data.get(name)
        if isinstance(toggles, list):
            for i, t in enumerate(toggles):
                # the toggles before it as harmless stand-ins: an error is located in the i-th block
                pads = [_pad(j) for j in range(i)]
                out.append(((name, str(i)), {name: [*pads, t]}))
        elif name in data:
            out.append(((name,), {name: toggles}))
    return out


_PAD_PREFIX = "EAGLETUI_LINT_PAD_"


def _pad(i: int) -> dict[str, str]:
    """The stand-in for toggle ``i``: an env toggle no profile uses."""
    return {"env": f"{_PAD_PREFIX}{i}"}


def _unpadded(prof: Profile) -> Profile:
    """The profile without the stand-ins of its broken toggles."""
    prof.toggles = tuple(t for t in prof.toggles if not t.name.startswith(_PAD_PREFIX))
    return prof


def _without(data: dict[str, Any], where: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with the piece at ``where`` left out (copies along the path)."""
    head, rest = where[0], where[1:]
    if isinstance(data, list):
        # a harmless stand-in, not a gap: the toggles after it keep their index, so a later error is
        # still located in its own [[toggles]] block (leaving it out shifted them: one toggle's error was
        # reported twice, once at the block before it) and a second removal takes the right one
        i = int(head)
        return [_pad(j) if j == i else x for j, x in enumerate(data)] if not rest else data  # type: ignore[return-value]
    out = dict(data)
    if not rest:
        out.pop(head, None)
    elif head in out and isinstance(out[head], (dict, list)):
        out[head] = _without(out[head], rest)
    return out


def load_problems(text: str, path: Any = None) -> tuple[Profile | None, list[ProfileError]]:
    """Every problem that keeps the profile from loading (at most :data:`MAX_LOAD_ERRORS`, each with
    ``file:line:col``), and the profile loaded without the broken pieces (None if even that fails)."""
    from eagletui.core.profile.load import parse_profile, profile_from_dict

    try:
        return parse_profile(text, path), []
    except ProfileError as exc:
        first = exc
    errors: list[ProfileError] = [first]
    try:
        data = toml_loads(text)
    except tomllib.TOMLDecodeError:
        # every syntax error at once, then the checks on what reads without the bad lines (issue 33
        # item 19: one error per run, then the next stage's); not past a broken [table] header
        readable, syntax, header_lost = syntax_errors(text, MAX_LOAD_ERRORS)
        errors = [ProfileError(f"invalid TOML: {msg}", path, line, col) for line, col, msg in syntax]
        if readable is None or header_lost:
            return None, errors
        data = toml_loads(readable)
    seen = {(first.line, first.col, first.message)}
    cleaned = data
    for where, piece in _pieces(data):
        try:
            profile_from_dict(piece, text, path)
        except ProfileError as exc:
            cleaned = _without(cleaned, where)
            key = (exc.line, exc.col, exc.message)
            if key not in seen and len(errors) < MAX_LOAD_ERRORS:
                seen.add(key)
                errors.append(exc)
    for _ in range(MAX_LOAD_ERRORS):  # what is left, whole: the problems between pieces
        try:
            prof = profile_from_dict(cleaned, text, path)
        except ProfileError as exc:
            key = (exc.line, exc.col, exc.message)
            if key in seen or len(errors) >= MAX_LOAD_ERRORS:
                return None, sorted(errors, key=lambda e: (e.line or 0, e.col or 0))
            seen.add(key)
            errors.append(exc)
            if "sweep" in cleaned:
                cleaned = _without(cleaned, ("sweep",))
            else:
                return None, sorted(errors, key=lambda e: (e.line or 0, e.col or 0))
            continue
        return _unpadded(prof), sorted(errors, key=lambda e: (e.line or 0, e.col or 0))
    return None, errors


def as_dict(err: ProfileError) -> dict[str, Any]:
    return {"message": err.message, "file": err.path, "line": err.line, "col": err.col}
