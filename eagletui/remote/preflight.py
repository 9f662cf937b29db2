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
from eagletui.remote.gpu import APPS_QUERY, QUERY, missing_nvidia_smi, parse_query
from eagletui.remote.transport import Transport, TransportError

#: ``unknown``: the check could not be made (it timed out, the host did not answer): not a failure,
#: and not a pass either. A launch is blocked only by ``fail``.
Status = Literal["pass", "warn", "fail", "unknown"]

#: Seconds the host-side checks may take. Generous on purpose: a big host with network storage and
#: eight GPUs answers slowly, and a check that times out is reported as unknown, never as failed.
HOST_CHECK_BUDGET_S = 60.0
GPU_QUERY_BUDGET_S = 30.0
#: Seconds the checkpoint probe of the host checks may take (the page-cache scan and a read of at most
#: 256 MiB of the least cached shard, half each); it reads what the launch is about to load anyway.
PROBE_S = 3.0


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


HOST_SCRIPT = r"""
import json, os, re, shutil, socket, sys
spec = json.load(sys.stdin)
out = []
def add(name, status, msg, version=None, data=None):
    out.append([name, status, msg] + ([version] if version or data else []) + ([data] if data else []))
add("python", "pass", "%s %s" % (sys.executable, sys.version.split()[0]))
mod = spec["module"]
def locate(name):
    # Where NAME's code is, without importing it or any parent package: find_spec("a.b") imports "a",
    # and "import sglang" takes 17-19 s on a GPU host (torch, triton, ...). PathFinder only looks.
    # The top level is asked of every finder on sys.meta_path (PathFinder among them): an editable
    # install (pip install -e) is found by its own finder, not on sys.path; none of them imports.
    from importlib.machinery import PathFinder
    parts = name.split(".")
    found = None
    for finder in sys.meta_path:
        try:
            found = finder.find_spec(parts[0], None)
        except (AttributeError, ImportError, ValueError, TypeError):
            found = None
        if found is not None:
            break
    for part in parts[1:]:
        if found is None or not found.submodule_search_locations:
            return None
        found = PathFinder.find_spec(part, list(found.submodule_search_locations))
    return found
try:
    found = locate(mod)
except (ImportError, ValueError, OSError):
    found = None
if found is None:
    add("server module", "fail", "%s is not importable with %s" % (mod, sys.executable))
elif mod == "eagletui.sim.vllm":
    ver = "?"
    try:
        src = open(locate("eagletui.sim.vllm").origin).read()
        m = re.search(r"^VERSION\s*=\s*['\"]([^'\"]+)", src, re.M)
        ver = m.group(1) if m else "?"
    except Exception:
        pass
    add("server module", "pass", "vLLM simulator eagletui.sim.vllm importable (vllm-compat %s)" % ver, ver if ver != "?" else None)
elif mod == "eagletui.sim":
    ver = "?"
    try:
        cli = locate("eagletui.sim.cli")
        m = re.search(r"DEFAULT_VERSION\s*=\s*['\"]([^'\"]+)", open(cli.origin).read())
        ver = m.group(1) if m else "?"
    except Exception:
        pass
    add("server module", "pass", "simulator eagletui.sim importable (sglang-compat %s)" % ver, ver if ver != "?" else None)
else:
    ver = None
    try:
        from importlib.metadata import version
        ver = version(mod.split(".")[0])
    except Exception:
        pass
    where = os.path.dirname(found.origin) if found.origin else ", ".join(found.submodule_search_locations or [])
    add("server module", "pass", "%s importable (version %s, %s)" % (mod, ver or "unknown", where), ver)
port = spec["port"]
def listeners(port):
    # Listening sockets on PORT from /proc/net/tcp{,6} (state 0A), or None where /proc says nothing.
    # A TIME_WAIT socket left by the last server is not a listener: uvicorn binds with SO_REUSEADDR.
    seen, tw = None, 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]
        except OSError:
            continue
        seen = seen or []
        for ln in lines:
            f = ln.split()
            if len(f) < 4 or int(f[1].rsplit(":", 1)[1], 16) != port:
                continue
            if f[3] == "0A":
                seen.append(f[1])
            elif f[3] == "06":
                tw += 1
    return seen, tw
held, tw = listeners(port)
busy = False
if held is None:
    for addr in ("127.0.0.1", spec.get("host") or "0.0.0.0"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
        except OSError as e:
            busy = str(e)
        finally:
            s.close()
elif held:
    busy = "a socket is listening on it"
if busy:
    add("port", "fail", "port %d is already in use on the host (%s)" % (port, busy))
else:
    add("port", "pass", "port %d is free%s" % (port, " (%d connection(s) of an earlier server in TIME_WAIT, harmless)" % tw if tw else ""))
def local_like(p):
    return p.startswith(("/", "~", "./", "../")) or os.path.isdir(os.path.expanduser(p))
def cfg_of(label, p):
    if not p:
        return None
    path = os.path.expanduser(p)
    if not local_like(p):
        add(label, "warn", "%s is not a local directory: assuming a Hugging Face id (downloaded or cached on launch)" % p)
        return None
    if not os.path.isdir(path):
        add(label, "fail", "%s does not exist on the host" % p)
        return None
    cj = os.path.join(path, "config.json")
    try:
        cfg = json.load(open(cj))
    except (OSError, ValueError) as e:
        add(label, "fail", "%s has no readable config.json (%s)" % (p, e))
        return None
    add(label, "pass", "%s (%s)" % (p, ",".join(cfg.get("architectures") or []) or cfg.get("model_type", "?")))
    return cfg
tcfg = cfg_of("model", spec.get("model"))
dcfg = cfg_of("draft model", spec.get("draft"))
def text_cfg(c):
    return c.get("text_config") or c.get("language_config") or c
ctx = spec.get("context_length")
if tcfg:
    t = text_cfg(tcfg)
    mpe = t.get("max_position_embeddings")
    if ctx and mpe and int(ctx) > int(mpe):
        add("context length", "warn", "--context-length %s exceeds the model's max_position_embeddings %s" % (ctx, mpe))
if tcfg and dcfg:
    t, d = text_cfg(tcfg), text_cfg(dcfg)
    problems = []
    if t.get("hidden_size") and d.get("hidden_size") and t["hidden_size"] != d["hidden_size"]:
        problems.append("hidden_size %s (target) vs %s (draft)" % (t["hidden_size"], d["hidden_size"]))
    tv, dv = t.get("vocab_size"), d.get("vocab_size")
    dd = d.get("draft_vocab_size")
    if tv and dv and tv != dv:
        problems.append("vocab_size %s (target) vs %s (draft)" % (tv, dv))
    if tv and dd and dd > tv:
        problems.append("draft_vocab_size %s > target vocab_size %s" % (dd, tv))
    dm = d.get("max_position_embeddings")
    if ctx and dm and int(ctx) > int(dm):
        problems.append("--context-length %s > draft max_position_embeddings %s" % (ctx, dm))
    if problems:
        add("draft compatibility", "fail", "; ".join(problems))
    else:
        add("draft compatibility", "pass", "hidden size %s, vocab %s%s" % (
            t.get("hidden_size"), tv, (", draft vocab %s" % dd) if dd else ""))
def cfg_facts(c):
    if not c:
        return None
    t = text_cfg(c)
    def num(k):
        v = t.get(k)
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return {"arch": ",".join(c.get("architectures") or []) or None, "hidden": num("hidden_size"),
            "vocab": num("vocab_size"), "draft_vocab": num("draft_vocab_size"),
            "max_position": num("max_position_embeddings")}
models = {"target": cfg_facts(tcfg), "draft": cfg_facts(dcfg)}
if tcfg or dcfg:
    add("model configs", "pass", "config.json of the %s" % " and the ".join(k for k in ("target", "draft") if models[k]), None, {"models": models})
NET_FS = ("nfs", "nfs4", "lustre", "cifs", "smb3", "gpfs", "beegfs", "ceph", "glusterfs", "9p", "fuse")
def fs_type(path):
    best, kind = "", None
    try:
        rp = os.path.realpath(path)
        for ln in open("/proc/mounts").read().splitlines()[:4096]:
            f = ln.split()
            if len(f) >= 3 and (rp == f[1] or rp.startswith(f[1].rstrip("/") + "/")) and len(f[1]) >= len(best):
                best, kind = f[1], f[2]
    except OSError:
        pass
    return kind
def shard_files(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    files, declared = [], None
    if os.path.isfile(idx) and os.path.getsize(idx) < (64 << 20):
        try:
            j = json.load(open(idx))
            wm = j.get("weight_map") or {}
            files = sorted(set(v for v in wm.values() if isinstance(v, str)))
            declared = (j.get("metadata") or {}).get("total_size")
        except (OSError, ValueError, AttributeError):
            files = []
    if not files:
        try:
            files = sorted(n for n in os.listdir(d) if n.endswith(".safetensors"))
        except OSError:
            files = []
    return [os.path.join(d, os.path.basename(f)) for f in files[:8192]], declared
def resident_fraction(path, size, libc, page):
    import ctypes
    fd = os.open(path, os.O_RDONLY)
    try:
        res, off = 0, 0
        while off < size:
            n = min(1 << 30, size - off)
            addr = libc.mmap(None, n, 1, 1, fd, off)
            if addr is None or addr == ctypes.c_void_p(-1).value:
                return None
            try:
                vec = (ctypes.c_ubyte * ((n + page - 1) // page))()
                if libc.mincore(ctypes.c_void_p(addr), n, vec) != 0:
                    return None
                raw = bytes(vec)
                res += len(raw) - raw.count(b"\x00")
            finally:
                libc.munmap(ctypes.c_void_p(addr), n)
            off += n
        pages = (size + page - 1) // page
        return float(res) / pages if pages else 1.0
    finally:
        os.close(fd)
def probe_checkpoint(d, budget):
    import time
    t0 = time.time()
    files, declared = shard_files(d)
    if not files:
        return None, None
    sizes = []
    for f in files:
        try:
            sizes.append(os.path.getsize(f))
        except OSError:
            sizes.append(0)
    total = sum(sizes)
    fs = fs_type(d)
    ck = {"path": d, "shards": len(files), "bytes": total or declared, "declared_bytes": declared, "fs": fs,
          "network": bool(fs) and any(fs.startswith(k) for k in NET_FS)}
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        page = os.sysconf("SC_PAGE_SIZE")
    except (OSError, AttributeError, ValueError):
        libc = None
    fracs = {}
    if libc is not None:
        # every shard while the time lasts, in an order that spreads over the checkpoint when it runs out
        n = len(files)
        order = sorted(range(n), key=lambda k: (k * 7919) % n)
        for i in order:
            if time.time() - t0 > budget / 2:
                break
            if sizes[i] <= 0:
                continue
            try:
                fr = resident_fraction(files[i], sizes[i], libc, page)
            except OSError:
                fr = None
            if fr is not None:
                fracs[i] = fr
    if fracs:
        sb = sum(sizes[i] for i in fracs)
        ck["cached"] = sum(fracs[i] * sizes[i] for i in fracs) / sb if sb else None
        ck["sampled_bytes"] = sb
    st = None
    cands = [i for i in range(len(files)) if sizes[i] > 0]
    if cands:
        i = min(cands, key=lambda k: (fracs.get(k, 0.5), -sizes[k]))
        want = min(sizes[i], 256 << 20)
        got, t1 = 0, time.time()
        try:
            with open(files[i], "rb", buffering=0) as fh:
                while got < want and time.time() - t1 < budget / 2:
                    b = fh.read(min(16 << 20, want - got))
                    if not b:
                        break
                    got += len(b)
        except OSError as e:
            st = {"why": "cannot read %s: %s" % (files[i], e)}
        dt = max(time.time() - t1, 1e-6)
        if st is None and got:
            st = {"file": os.path.basename(files[i]), "mb": got / 1e6, "seconds": dt, "mbps": got / 1e6 / dt,
                  "cached": fracs.get(i, 0.0) >= 0.9, "fs": fs, "network": ck["network"]}
    return ck, st
def gb(n):
    return "%.1f GB" % (n / 1e9) if n else "? GB"
mdir = spec.get("model") or ""
if spec.get("probe", True) and mdir and local_like(mdir) and os.path.isdir(os.path.expanduser(mdir)):
    try:
        ck, st = probe_checkpoint(os.path.expanduser(mdir), float(spec.get("probe_s") or 3.0))
    except Exception as e:
        ck, st = None, {"why": "%s: %s" % (type(e).__name__, e)}
    if ck:
        cached = ck.get("cached")
        add("checkpoint", "pass", "%d shards, %s%s%s" % (ck["shards"], gb(ck["bytes"]),
            "" if cached is None else ", %.0f %% in the page cache" % (100 * cached),
            " on %s" % ck["fs"] if ck.get("fs") else ""), None, {"checkpoint": ck})
    if st and st.get("mbps"):
        add("storage read", "pass", "%.0f MB in %.2f s: %.0f MB/s%s" % (st["mb"], st["seconds"], st["mbps"],
            " (page cache: not the storage's rate)" if st.get("cached") else ""), None, {"storage": st})
    elif st:
        add("storage read", "warn", st.get("why") or "no read", None, {"storage": st})
def free_under(p):
    d = os.path.abspath(os.path.expanduser(p))
    while d and not os.path.exists(d):
        d = os.path.dirname(d)
    return shutil.disk_usage(d or "/").free / 1e9, d or "/"
# (the model's disk check is DISK_SCRIPT's: it compares the free space with the model's size)
try:
    gb, d = free_under(spec["runs_dir"])
    if gb < 1:
        add("disk (logs)", "fail" if gb < 0.1 else "warn", "%.1f GB free for logs under %s" % (gb, d))
except OSError as e:
    add("disk (logs)", "warn", "cannot check free space for logs: %s" % e)
wd = os.path.expanduser(spec["workdir"])
if not os.path.isdir(wd):
    add("workdir", "fail", "workdir %s does not exist" % spec["workdir"])
sys.stdout.write(json.dumps(out))
"""


# -- the disk a launch needs for its weights -----------------------------------------------------
#
# "81.8 GB free" passed for a model that was not cached and needs hundreds of GB. The size is known
# where the host has it: a local model's safetensors index (or its shard files), or, for a Hugging
# Face id, the index in the cache's snapshot (the first file a download fetches) less the blobs
# already there. DISK_SCRIPT gathers those facts in one round trip; disk_checks() judges them.

DISK_SCRIPT = r"""
import json, os, shutil, sys
spec = json.load(sys.stdin)
def local_like(p):
    return p.startswith(("/", "~", "./", "../")) or os.path.isdir(os.path.expanduser(p))
def free_under(p):
    d = os.path.abspath(os.path.expanduser(p))
    while d and not os.path.exists(d):
        d = os.path.dirname(d)
    return shutil.disk_usage(d or "/").free, d or "/"
def hf_cache():
    env = dict(os.environ)
    env.update(spec.get("env") or {})
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return os.path.join(home, "hub")
def index_size(d):
    try:
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            total = json.load(f).get("metadata", {}).get("total_size")
        if isinstance(total, int) and total >= 0:
            return total
    except (OSError, ValueError, AttributeError):
        pass
    return None
def files_size(d, suffix):
    n = 0
    for name in os.listdir(d):
        if name.endswith(suffix):
            try:
                n += os.stat(os.path.join(d, name)).st_size
            except OSError:
                pass
    return n
out = []
for role in ("model", "draft"):
    ref = spec.get(role) or ""
    if not ref:
        continue
    fact = {"role": role, "ref": ref}
    try:
        if local_like(ref):
            d = os.path.expanduser(ref)
            fact["local"] = True
            fact["free"], fact["fs"] = free_under(d)
            if os.path.isdir(d):
                fact["total"] = index_size(d) or (files_size(d, ".safetensors") or None)
        else:
            cache = hf_cache()
            fact["local"] = False
            fact["cache"] = cache
            fact["free"], fact["fs"] = free_under(cache)
            repo = os.path.join(os.path.expanduser(cache), "models--" + ref.replace("/", "--"))
            snaps = os.path.join(repo, "snapshots")
            if os.path.isdir(snaps):
                for snap in sorted(os.listdir(snaps)):
                    total = index_size(os.path.join(snaps, snap))
                    if total is not None:
                        fact["total"] = total
            blobs = os.path.join(repo, "blobs")
            fact["present"] = files_size(blobs, "") if os.path.isdir(blobs) else 0
    except OSError as e:
        fact["error"] = str(e)
    out.append(fact)
sys.stdout.write(json.dumps(out))
"""

#: Free space a download needs beyond its size (the cache's temporary files, the logs): 5 %.
DISK_MARGIN = 1.05
#: With the model's size unknown, warn below this much free space (a big model is hundreds of GB).
UNKNOWN_SIZE_WARN_GB = 500.0


def disk_checks(facts: list[dict[str, Any]]) -> list[Check]:
    """The ``disk`` check from :data:`DISK_SCRIPT`'s facts: what the weights still need against the
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
        res = await transport.run([profile.python, "-c", DISK_SCRIPT], input=json.dumps(spec), timeout=20)
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
        res = await transport.run(["true"], timeout=10)
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
        "probe_s": PROBE_S,
        # the launch's own env decides where the Hugging Face cache is
        "env": {
            k: str(v) for k, v in profile.env.items() if k in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME")
        },
    }
    try:
        res = await transport.run(
            [profile.python, "-c", HOST_SCRIPT], input=json.dumps(spec), timeout=HOST_CHECK_BUDGET_S
        )
    except TimeoutError:
        return [
            Check(
                "python",
                "unknown",
                f"the host checks ({profile.python}: server module, port, model paths, disk) timed out "
                f"after {HOST_CHECK_BUDGET_S:.0f} s",
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
        res = await transport.run(["nvidia-smi", "topo", "-m"], timeout=GPU_QUERY_BUDGET_S)
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
            transport.run(QUERY, timeout=GPU_QUERY_BUDGET_S),
            transport.run(APPS_QUERY, timeout=GPU_QUERY_BUDGET_S),
        )
    except TimeoutError:
        return [Check("gpus", "unknown", f"nvidia-smi timed out after {GPU_QUERY_BUDGET_S:.0f} s")]
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
        checks.append(Check("gpus", "pass", f"{len(gpus)} × {', '.join(names)}"))
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
    return [*checks, *out], learned
