"""The two scripts the preflight runs on the host (``python -c SCRIPT``, the spec on stdin).

``HOST_SCRIPT`` checks what a launch needs there in one round trip: the interpreter, the server module
(found without importing it), the port, the model and draft configs, a probe of the checkpoint's
page cache and read rate, the free space for the logs, the workdir; ``DISK_SCRIPT`` gathers the
facts of the disk the weights need. Like the host-side programs they are stdlib-only Python for the
host's own interpreter, so they are text here, not code. Apart from :mod:`eagletui.remote.preflight`
because they are most of its length and none of its logic: the client judges their answers there.
"""

#: One row per check: ``[name, status, message, version?, data?]`` (read by ``preflight._check``).
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
        cfg = read_json(cj, MAX_CONFIG)
        if not isinstance(cfg, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        add(label, "fail", "%s has no readable config.json (%s)" % (p, e))
        return None
    add(label, "pass", "%s (%s)" % (p, ",".join(archs_of(cfg)) or str(cfg.get("model_type", "?"))[:80]))
    return cfg
# A config.json is a few kB (Kimi-K2.5's is 6 kB); anything that is not a regular file of a few MB
# (a FIFO would block the read, /dev/zero never ends, a 10 GB file fills the memory) is refused unread.
MAX_CONFIG = 4 << 20
def read_json(path, limit):
    import stat
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    if st.st_size > limit:
        raise ValueError("%d bytes, more than the %d a config may have" % (st.st_size, limit))
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError("more than %d bytes" % limit)
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except RecursionError:
        raise ValueError("nested too deeply")
def archs_of(c):
    a = c.get("architectures")
    return [str(x)[:120] for x in a[:8]] if isinstance(a, list) else []
def num_of(t, k):
    v = t.get(k)
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 40 else None
# d2t / t2d of an EAGLE-3 draft: their shapes from the safetensors header (8-byte length, then JSON),
# read without loading a tensor; at most 16 files and a 16 MiB header each.
def vocab_maps(d):
    import glob, struct
    out = {}
    for fn in sorted(glob.glob(os.path.join(d, "*.safetensors")))[:16]:
        try:
            if not os.path.isfile(fn):
                continue
            with open(fn, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                if n > 16 << 20:
                    continue
                head = json.loads(f.read(n).decode("utf-8", "replace"))
        except (OSError, ValueError, struct.error, RecursionError):
            continue
        if not isinstance(head, dict):
            continue
        for name, meta in head.items():
            key = name.rsplit(".", 1)[-1]
            shape = meta.get("shape") if isinstance(meta, dict) else None
            if key in ("d2t", "t2d") and isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], int):
                out[key] = shape[0]
    return out
tcfg = cfg_of("model", spec.get("model"))
dcfg = cfg_of("draft model", spec.get("draft"))
def text_cfg(c):
    t = c.get("text_config") or c.get("language_config") or c
    return t if isinstance(t, dict) else c
try:
    ctx = int(spec.get("context_length") or 0) or None
except (TypeError, ValueError):
    ctx = None
if tcfg:
    mpe = num_of(text_cfg(tcfg), "max_position_embeddings")
    if ctx and mpe and ctx > mpe:
        add("context length", "warn", "--context-length %s exceeds the model's max_position_embeddings %s" % (ctx, mpe))
if tcfg and dcfg:
    t, d = text_cfg(tcfg), text_cfg(dcfg)
    problems = []
    th = num_of(t, "hidden_size")
    dh = num_of(d, "target_hidden_size") or num_of(d, "hidden_size")  # what the draft reads of the target
    if th and dh and th != dh:
        problems.append("hidden_size %s (target) vs %s (draft)" % (th, dh))
    tv, dv = num_of(t, "vocab_size"), num_of(d, "vocab_size")
    dd = num_of(d, "draft_vocab_size")
    if tv and dv and tv != dv:
        problems.append("vocab_size %s (target) vs %s (draft)" % (tv, dv))
    if tv and dd and dd > tv:
        problems.append("draft_vocab_size %s > target vocab_size %s" % (dd, tv))
    dm = num_of(d, "max_position_embeddings")
    if ctx and dm and ctx > dm:
        problems.append("--context-length %s > draft max_position_embeddings %s" % (ctx, dm))
    if problems:
        add("draft compatibility", "fail", "; ".join(problems))
    else:
        add("draft compatibility", "pass", "hidden size %s, vocab %s%s" % (
            th, tv, (", draft vocab %s" % dd) if dd else ""))
def cfg_facts(c, maps_from=None):
    if not c:
        return None
    t = text_cfg(c)
    out = {"arch": ",".join(archs_of(c)) or None, "hidden": num_of(t, "hidden_size"),
           "vocab": num_of(t, "vocab_size"), "draft_vocab": num_of(t, "draft_vocab_size"),
           "max_position": num_of(t, "max_position_embeddings"),
           "target_hidden": num_of(t, "target_hidden_size"),
           "mla": t.get("kv_lora_rank") is not None and not isinstance(t.get("kv_lora_rank"), (dict, list))}
    if maps_from:
        out.update(vocab_maps(maps_from))
    return out
dpath = os.path.expanduser(spec.get("draft") or "")
models = {"target": cfg_facts(tcfg), "draft": cfg_facts(dcfg, dpath if dcfg and os.path.isdir(dpath) else None)}
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


#: The facts of the disk a launch needs for its weights (free space where they go, their size, what
#: the Hugging Face cache already holds), in one round trip; ``preflight.disk_checks`` judges them.
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
