"""Pre-launch checks: catch in three seconds what would otherwise fail ten minutes into a launch.

Host-side facts (python, the server module, paths, configs, port, disk) come from one small script
in a single round trip; nvidia-smi runs alongside it. Everything that merely *might* be fine (an
HF hub id instead of a local dir, no GPUs for the simulator) is a warning, not a failure; no GPUs for
a real server is a failure. The disk check looks where a launch writes gigabytes: the Hugging Face
cache (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface, as the launch's env sets them) or the local
model's filesystem; the logs directory is mentioned only when it is nearly full.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from eagletui.core.profile.model import Profile
from eagletui.core.servers.flag_rule import FlagTable, check_server_flags, check_values
from eagletui.core.servers.flagtables import table_for
from eagletui.core.servers.spec import adaptive_fallback_text, speculates
from eagletui.core.servers.spec_preflight import (
    ISSUES,
    ModelFacts,
    adaptive_fallback_reason,
    spec_config_findings,
)
from eagletui.remote.gpu import APPS_QUERY, QUERY, missing_nvidia_smi, parse_query
from eagletui.remote.preflight_scripts import DISK_SCRIPT, HOST_SCRIPT
from eagletui.remote.transport import Transport, TransportError

#: ``unknown``: the check could not be made (it timed out, the host did not answer): not a failure,
#: and not a pass either. A launch is blocked only by ``fail``.
Status = Literal["pass", "warn", "fail", "unknown"]

# The checks' budgets are the transport's ``timings.preflight``: generous on purpose (a big host with
# network storage and eight GPUs answers slowly), and a check that times out is reported as unknown,
# never as failed. ``port_probe_s`` bounds the checkpoint probe of the host checks (the page-cache scan
# and a read of at most 256 MiB of the least cached shard, half each): it reads what the launch is
# about to load anyway.


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    message: str
    #: the server's version, on the "server module" check when the host could tell it
    version: str | None = None
    #: what the check measured, for the diagnoses (``checkpoint``, ``storage``, ``models``, ``topology``:
    #: see :class:`eagletui.core.events.HostFacts`)
    data: dict[str, Any] | None = None


# -- the disk a launch needs for its weights -----------------------------------------------------
#
# "81.8 GB free" passed for a model that was not cached and needs hundreds of GB. The size is known
# where the host has it: a local model's safetensors index (or its shard files), or, for a Hugging
# Face id, the index in the cache's snapshot (the first file a download fetches) less the blobs
# already there. DISK_SCRIPT (in preflight_scripts) gathers those facts in one round trip; disk_checks() judges them.

#: Free space a download needs beyond its size (the cache's temporary files, the logs): 5 %.
DISK_MARGIN = 1.05
#: With the model's size unknown, warn below this much free space (a big model is hundreds of GB).
UNKNOWN_SIZE_WARN_GB = 500.0


def disk_checks(facts: list[dict[str, Any]]) -> list[Check]:
    """The ``disk`` check from :data:`~eagletui.remote.preflight_scripts.DISK_SCRIPT`'s facts: what the weights still need against the
    free space where they go, or a warning when their size cannot be known."""
    if not facts:
        return []
    gb = 1e9
    need = 0.0
    unknown: list[str] = []
    parts: list[str] = []
    free = (
        min(float(f.get("free") or 0) for f in facts if "error" not in f)
        if any("error" not in f for f in facts)
        else None
    )
    errors = [f"{f['ref']}: {f['error']}" for f in facts if "error" in f]
    if free is None:
        return [Check("disk", "warn", "cannot check free space: " + "; ".join(errors))]
    first = next(f for f in facts if "error" not in f)
    where = (
        f"the Hugging Face cache {first.get('cache')}"
        if not first.get("local")
        else f"on the model's filesystem ({first.get('fs')})"
    )
    for f in facts:
        if "error" in f:
            continue
        total = f.get("total")
        if f.get("local"):
            if total:
                parts.append(f"{f['ref']} is on the host ({total / gb:.1f} GB)")
            continue
        if total is None:
            unknown.append(f["ref"])
            continue
        missing = max(0.0, float(total) - float(f.get("present") or 0))
        need += missing
        parts.append(
            f"{f['ref']} needs {missing / gb:.1f} GB more ({total / gb:.1f} GB in all)"
            if missing
            else f"{f['ref']} is cached ({total / gb:.1f} GB)"
        )
    head = f"{free / gb:.1f} GB free {'for ' if not first.get('local') else ''}{where}"
    if need and free < need * DISK_MARGIN:
        return [Check("disk", "fail", f"{head}: the download does not fit: " + "; ".join(parts))]
    if free < 0.1 * gb:
        return [Check("disk", "fail", f"{head}: nearly full")]
    if unknown:
        status: Status = "warn" if free < UNKNOWN_SIZE_WARN_GB * gb else "pass"
        msg = (
            f"{head}; the size of {', '.join(unknown)} is unknown (not cached on the host): a large model "
            "needs hundreds of GB"
        )
        return [Check("disk", status, "; ".join([msg, *parts]))]
    if all(f.get("local") for f in facts if "error" not in f) and free < gb:
        return [Check("disk", "warn", f"{head} (nearly full)")]
    return [Check("disk", "pass", "; ".join([head, *parts]) if parts else head)]


async def _disk_check(transport: Transport, profile: Profile) -> list[Check]:
    spec = {
        "model": str(profile.args.get("--model-path", "") or ""),
        "draft": str(profile.args.get("--speculative-draft-model-path", "") or ""),
        "env": {
            k: str(v) for k, v in profile.env.items() if k in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME")
        },
    }
    if not spec["model"] and not spec["draft"]:
        return []
    try:
        res = await transport.run([profile.python, "-c", DISK_SCRIPT], input=json.dumps(spec), timeout=transport.timings.preflight.disk_s)
        facts = json.loads(res.stdout) if res.exit_status == 0 else None
    except (TransportError, TimeoutError, OSError, ValueError) as exc:
        return [Check("disk", "warn", f"cannot check free space: {exc}")]
    if not isinstance(facts, list):
        return [Check("disk", "warn", f"cannot check free space: {res.stderr.strip()[-200:]}")]
    return disk_checks([f for f in facts if isinstance(f, dict)])


def server_module(profile: Profile) -> str:
    """The module the launch command runs (``-m X``), else the server kind's package (custom commands)."""
    cmd = list(profile.command)
    for i, part in enumerate(cmd[:-1]):
        if part == "-m":
            return cmd[i + 1]
    return profile.kind.flag_module


def flag_module(profile: Profile) -> str:
    """Whose parser decides the launch's flags: the simulator's, or the server kind's."""
    module = server_module(profile)
    return module if module.startswith("eagletui") else profile.kind.flag_module


def connection_check_name(target: str) -> str:
    """``host`` for the local machine (there is no SSH), ``ssh`` for a remote one."""
    return "host" if target in ("", "local") else "ssh"


async def _ssh_check(transport: Transport) -> Check:
    name = connection_check_name(transport.target)
    t0 = time.monotonic()
    try:
        res = await transport.run(["true"], timeout=transport.timings.preflight.reach_s)
    except (TransportError, TimeoutError, OSError) as exc:
        return Check(name, "fail", f"{transport.target}: {exc}")
    ms = (time.monotonic() - t0) * 1000
    if res.exit_status != 0:
        return Check(name, "fail", f"{transport.target}: running a command failed: {res.stderr.strip()}")
    kind = "local machine" if name == "host" else f"connected to {transport.target}"
    return Check(name, "pass", f"{kind}, round trip {ms:.0f} ms")


async def _host_checks(transport: Transport, profile: Profile) -> list[Check]:
    kind = profile.kind
    spec = {
        "module": server_module(profile),
        "port": profile.port,
        "host": profile.host,
        "model": kind.model(profile.args),
        "draft": kind.draft(profile.args),
        "context_length": profile.args.get(kind.context_flag) if kind.context_flag else None,
        "runs_dir": profile.runs_dir,
        "workdir": profile.workdir,
        "probe_s": transport.timings.preflight.port_probe_s,
        # the launch's own env decides where the Hugging Face cache is
        "env": {
            k: str(v) for k, v in profile.env.items() if k in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME")
        },
    }
    try:
        res = await transport.run(
            [profile.python, "-c", HOST_SCRIPT], input=json.dumps(spec), timeout=transport.timings.preflight.host_check_s
        )
    except TimeoutError:
        return [
            Check(
                "python",
                "unknown",
                f"the host checks ({profile.python}: server module, port, model paths, disk) timed out "
                f"after {transport.timings.preflight.host_check_s:.0f} s",
            )
        ]
    except (TransportError, OSError) as exc:
        return [
            Check("python", "fail", f"cannot run {profile.python} on the host: {exc or type(exc).__name__}")
        ]
    if res.exit_status != 0:
        last = res.stderr.strip().splitlines()[-1:] or [f"exit status {res.exit_status}"]
        return [Check("python", "fail", f"{profile.python} does not run on the host: {last[0]}")]
    try:
        return [_check(row) for row in json.loads(res.stdout)]
    except (ValueError, TypeError):
        return [Check("python", "fail", f"unexpected output from the host check: {res.stdout[-200:]!r}")]


#: Bounds on what a host check's ``data`` may hold (a hostile host answers with anything).
MAX_DATA_CHARS = 200_000


def _check(row: Any) -> Check:
    """One ``[name, status, message, version?, data?]`` row of the host script's answer."""
    n, st, m, *rest = row
    version = rest[0] if rest and isinstance(rest[0], str) else None
    data = rest[1] if len(rest) > 1 and isinstance(rest[1], dict) else None
    if data is not None and len(json.dumps(data)) > MAX_DATA_CHARS:
        data = None
    return Check(str(n), st, str(m), version, data)


def host_facts(checks: list[Check]) -> dict[str, Any]:
    """The measurements of the checks (``checkpoint``, ``storage``, ``models``, ``topology``) in one dict,
    as :class:`~eagletui.core.events.HostFacts` carries them."""
    out: dict[str, Any] = {}
    for c in checks:
        if c.data:
            for k, v in c.data.items():
                if k in ("checkpoint", "storage", "models", "topology"):
                    out[k] = v
    version = host_version(checks)
    if version:
        out["server"] = {"version": version}  # the hints name flags of this version
    return out


async def _topology_check(transport: Transport, profile: Profile) -> list[Check]:
    """``nvidia-smi topo -m``: the link between each pair of GPUs (nothing when nvidia-smi is absent)."""
    from eagletui.core.host.topology import parse_topo

    try:
        res = await transport.run(["nvidia-smi", "topo", "-m"], timeout=transport.timings.preflight.gpu_query_s)
    except (TimeoutError, TransportError, OSError):
        return []
    if res.exit_status != 0:
        return []
    topo = parse_topo(res.stdout[:200_000])
    if not topo.seen:
        return []
    tp = _tp(profile)
    gpus = topo.gpus[:tp] if len(topo.gpus) >= tp else topo.gpus
    return [Check("topology", "pass", topo.describe(gpus), None, {"topology": topo.to_json()})]


async def _gpu_check(transport: Transport, profile: Profile, ours: OwnServer | None = None) -> list[Check]:
    try:
        res, apps = await asyncio.gather(
            transport.run(QUERY, timeout=transport.timings.preflight.gpu_query_s),
            transport.run(APPS_QUERY, timeout=transport.timings.preflight.gpu_query_s),
        )
    except TimeoutError:
        return [
            Check("gpus", "unknown", f"nvidia-smi timed out after {transport.timings.preflight.gpu_query_s:.0f} s")
        ]
    except (TransportError, OSError) as exc:
        return [Check("gpus", "warn", f"cannot query GPUs: {exc or type(exc).__name__}")]
    simulated = server_module(profile).startswith("eagletui.sim")
    if res.exit_status != 0:
        if missing_nvidia_smi(res.exit_status, res.stderr):
            if simulated:
                return [
                    Check("gpus", "warn", "no GPUs visible: nvidia-smi not found (fine for the simulator)")
                ]
            return [Check("gpus", "fail", f"no GPUs visible: nvidia-smi not found, and {_needs(profile)}")]
        return [
            Check("gpus", "warn" if simulated else "fail", f"nvidia-smi failed: {res.stderr.strip()[:200]}")
        ]
    gpus = parse_query(res.stdout)
    tp = _tp(profile)
    checks = []
    if not gpus:
        if simulated:
            checks.append(Check("gpus", "warn", "nvidia-smi lists no GPUs (fine for the simulator)"))
        else:
            checks.append(Check("gpus", "fail", f"nvidia-smi lists no GPUs, and {_needs(profile)}"))
    elif len(gpus) < tp and not simulated:
        checks.append(Check("gpus", "fail", f"--tp {tp} needs {tp} GPUs, the host has {len(gpus)}"))
    else:
        names = sorted({g["name"] for g in gpus})
        checks.append(Check("gpus", "pass", f"{len(gpus)} × {', '.join(names)}", None, {"gpus": names}))
    holders = _memory_holders(apps.stdout if apps.exit_status == 0 else "")
    mine = [h for h in holders if ours is not None and h[0] in ours.pids]
    others = [h for h in holders if h not in mine]
    busy = [g for g in gpus if (g["mem_used_mb"] or 0) > 1024]
    if others or (busy and not holders):
        desc = "; ".join(_holder_text(h) for h in others) or ", ".join(
            f"GPU {g['index']}: {g['mem_used_mb']:.0f} MiB used" for g in busy
        )
        checks.append(Check("gpus free", "warn", f"GPU memory is in use: {desc}"))
    elif mine and ours is not None:
        mib = sum(h[2] for h in mine)
        checks.append(
            Check(
                "gpus free",
                "pass",
                f"only {ours.label} holds GPU memory ({len(mine)} process(es), {mib:.0f} MiB); it is stopped "
                "before the launch",
            )
        )
    elif gpus:
        checks.append(Check("gpus free", "pass", "no processes hold GPU memory"))
    return checks


@dataclass(frozen=True)
class OwnServer:
    """eagletui's own running server, which a relaunch stops first: its GPU memory is no obstacle."""

    pids: frozenset[int]
    label: str  # "launch #2"


def _holder_text(h: tuple[int, str, float]) -> str:
    return f"pid {h[0]} {h[1]} ({h[2]:.0f} MiB)"


def _tp(profile: Profile) -> int:
    return _int(profile.args.get("--tp", profile.args.get("--tp-size", 1))) or 1


def _needs(profile: Profile) -> str:
    tp = _tp(profile)
    return f"{server_module(profile)} needs {tp} GPU{'s' if tp != 1 else ''} (--tp-size {tp})"


def _memory_holders(text: str) -> list[tuple[int, str, float]]:
    """(pid, process name, MiB) per line of ``nvidia-smi --query-compute-apps``; junk lines skipped."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 4 and parts[1].isdigit():
            try:
                mib = float(parts[3])
            except ValueError:
                mib = 0.0
            out.append((int(parts[1]), parts[2], mib if mib == mib else 0.0))
    return out


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


async def run_preflight(transport: Transport, profile: Profile, ours: OwnServer | None = None) -> list[Check]:
    ssh, host, gpu, disk, topo = await asyncio.gather(
        _ssh_check(transport),
        _host_checks(transport, profile),
        _gpu_check(transport, profile, ours),
        _disk_check(transport, profile),
        _topology_check(transport, profile),
    )
    return [ssh, *host, *disk, *gpu, *topo]


def host_version(checks: list[Check]) -> str | None:
    """The server (or simulator-compatible) version the host check found, e.g. ``0.5.23``: a field of
    the "server module" check, never read back out of its wording."""
    for c in checks:
        if c.name == "server module" and c.status == "pass" and c.version:
            m = re.match(r"\d+\.\d+(?:\.\d+)?", c.version)
            if m:
                return m.group(0)
    return None


def launch_flags(profile: Profile) -> list[str]:
    """The ``--flags`` the launch argv will carry (unset and switched-off ones are left out)."""
    return [k for k, v in profile.args.items() if v is not None and v is not False]


def flag_table_for(
    module: str, learned: FlagTable | None, version: str | None = None, declared: str | None = None
) -> FlagTable | None:
    """The host's parser when it answered; for sglang otherwise the shipped flag table of the host's
    release (``version``, as the host check found it), else of the profile's ``[server] version``, else
    of the newest release (:func:`eagletui.core.servers.flagtables.table_for`; its ``source`` says which). The
    simulator has ``--sim-*`` options sglang lacks, and no table of vLLM's flags ships, so without
    their own answer nothing is checked for them."""
    if learned is not None:
        return learned
    return table_for(version, declared) if module.split(".")[0] == "sglang" else None


def flag_checks(
    flags: list[str], table: FlagTable | None, version: str | None, values: dict[str, Any] | None = None
) -> list[Check]:
    """argparse's verdict on every flag (and on ``values`` with fixed choices) as preflight lines: one
    ``fail`` per refusal, ``warn`` per deprecation, one ``pass`` naming the abbreviations it expands."""
    report = check_server_flags(flags, table, version)
    report.errors += check_values(values or {}, table, version)
    checks = [Check("flags", "fail", m) for m in report.errors]
    checks += [Check("flags", "warn", m) for m in report.warnings]
    fallback = adaptive_fallback_reason(values or {}, version)
    if fallback is not None:  # the server starts and only warns: the profile check says the same
        checks.append(Check("flags", "warn", adaptive_fallback_text(fallback)))
    if not report.errors:
        source = table.source if table is not None else "the version notes only (parser unknown)"
        msg = f"{report.checked} flags accepted by {source}"
        if report.notes:
            msg += "; " + "; ".join(report.notes)
        checks.insert(0, Check("flags", "pass", msg))
    return checks


async def run_preflight_with_flags(
    transport: Transport, profile: Profile, learned: FlagTable | None = None, ours: OwnServer | None = None
) -> tuple[list[Check], FlagTable | None]:
    """The host checks plus the flag check; asks the host's parser (in parallel) unless ``learned`` is
    given. Returns the checks and the table the host answered (None if it did not), for reuse."""
    from eagletui.remote.known_flags import host_flags

    module = flag_module(profile)
    why_not = ""
    if learned is None:
        checks, (learned, why_not) = await asyncio.gather(
            run_preflight(transport, profile, ours), host_flags(transport, profile.python, module)
        )
    else:
        checks = await run_preflight(transport, profile, ours)
    table = flag_table_for(module, learned, host_version(checks), profile.server_version)
    flags = launch_flags(profile)
    if table is None and module == "vllm":
        # no bundled table: without the host's own parser the flags are not checked, and it says so
        why = f"could not ask the host's vllm parser ({why_not or profile.python}): the flags are not checked before launch"
        return [*checks, Check("flags", "warn", why)], learned
    values = {f: profile.args[f] for f in flags}
    # the version notes of core.flags are SGLang's: another server's version must not select them
    version = (host_version(checks) or profile.server_version) if profile.kind.flag_module == "sglang" else None
    out = flag_checks(flags, table, version, values)
    if why_not and table is not None and table is not learned:
        out = [Check(c.name, c.status, f"{c.message} ({why_not})") if c.status == "pass" else c for c in out]
    if profile.kind.flag_module == "sglang":
        out += spec_checks(profile.args, version, checks)
    return [*checks, *out], learned


def spec_checks(args: dict[str, Any], version: str | None, checks: list[Check]) -> list[Check]:
    """The speculative-config findings (:func:`~eagletui.core.servers.spec_preflight.spec_config_findings`)
    for these flags on the host's version, from what the host checks read of the models and GPUs: one
    ``spec config`` line each, naming its public issue."""
    facts = host_facts(checks).get("models")
    models = facts if isinstance(facts, dict) else {}
    gpus: list[str] = []
    for c in checks:
        if c.name == "gpus" and c.data and isinstance(c.data.get("gpus"), list):
            gpus = [str(g) for g in c.data["gpus"]]
    found = spec_config_findings(
        args,
        version,
        ModelFacts.from_facts(models.get("target")),
        ModelFacts.from_facts(models.get("draft")),
        gpus,
    )
    if not found and speculates(args):
        said = ", ".join(sorted(set(ISSUES.values())))
        where = f"sglang {version}" if version else "this sglang (version unknown)"
        return [Check("spec config", "pass", f"none of the known speculative start-up failures of {where} ({said})")]
    return [Check("spec config", f.status, f.text()) for f in found]
