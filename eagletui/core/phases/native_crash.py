"""A native crash in a Python server process, and where it happened, read from what the runtime prints.

A segfault in compiled code (a CUDA or NCCL library, a kernel, the torch profiler's destructor) ends the
process without a Python exception: with ``faulthandler`` enabled (SGLang's scheduler enables it)
CPython prints ``Fatal Python error: Segmentation fault`` and then, per thread, the Python frames it
was running (``Current thread 0x… (most recent call first):`` then ``  File "…", line 351 in
ncclCommInitRank``); some stacks add native frames (absl's ``PC: @ 0x… (unknown) addProxyOpIfNeeded()``,
gdb's ``#0 0x… in c10d::ProcessGroupNCCL::…``, a demangled ``torch::autograd::profiler::…()``). The
parent then reports the child's death by signal (SGLang: ``Subprocess scheduler_0 (pid=…) crashed with
exit code -11``). None of this is SGLang's wording, so it lives here, server-neutral.

:class:`CrashSite` is fed the lines after the crash line and says "in what": the innermost native
frame when one is printed, and the innermost Python frame of the crashing thread.
"""

from __future__ import annotations

import re

#: What the fatal line or the signal of a death by signal calls the crash.
SIGNAL_NAMES = {
    11: "Segmentation fault",
    7: "Bus error",
    6: "Aborted",
    8: "Floating point exception",
    4: "Illegal instruction",
}

_FATAL = re.compile(r"Fatal Python error: (" + "|".join(SIGNAL_NAMES.values()) + r")")
# UCX's (and OpenMPI's) handler, printed before faulthandler's line: ``[node-1:4306 :0:10324] Caught
# signal 11 (Segmentation fault: address not mapped …)``, then ``==== backtrace (tid: …) ====`` and
# numbered frames `` 1 0x00000000000494f4 uploadProxyOps()  /…/nccl/…/src/enqueue.cc:1131``.
_CAUGHT = re.compile(r"Caught signal \d{1,2} \((" + "|".join(SIGNAL_NAMES.values()) + r")")
_UCX_FRAME = re.compile(r"^\s*\d{1,3} 0x[0-9a-f]+ ([A-Za-z_][\w:~]{0,200})\(\)\s+(/\S{1,600}):(\d{1,7})")
_EXIT = re.compile(r"(?:exit code|exitcode|exit status)[ :=]*-(\d{1,2})\b")
_CHILD = re.compile(r"Subprocess (\S{1,64}) \(pid")
_PY_FRAME = re.compile(r'File "([^"]{1,600})", line (\d{1,7}),? in ([\w.<>]{1,200})')
_CURRENT = re.compile(r"^\s*Current thread 0x[0-9a-fA-F]+")
_OTHER_THREAD = re.compile(r"^\s*Thread 0x[0-9a-fA-F]+")
# Native frames: a qualified C++ name with its call parens, absl's PC line, gdb's frame line.
_CXX = re.compile(r"((?:[A-Za-z_]\w{0,80}::){1,12}~?[A-Za-z_]\w{0,80})\s*\(")
_ABSL_PC = re.compile(r"PC: @\s+0x[0-9a-f]+\s+\S+\s+([A-Za-z_][\w:~]{0,200})\(")
_GDB = re.compile(r"^\s*#0\s+0x[0-9a-f]+ in ([^\s(]{1,200})")
_PACKAGES = ("sglang", "torch", "triton", "flashinfer", "sgl_kernel", "transformers", "vllm", "deep_gemm")
_MAX_LINES = 400  # lines after the crash that may still belong to its stack dump


def crash_kind(msg: str) -> str | None:
    """``Segmentation fault`` (…) for a fatal-error line or a death by SIGSEGV/SIGBUS/SIGABRT/SIGFPE/
    SIGILL (``exit code -11``), else None."""
    head = msg[:2000]
    m = _FATAL.search(head) or _CAUGHT.search(head)
    if m:
        return m.group(1)
    e = _EXIT.search(head)
    if e and int(e.group(1)) in SIGNAL_NAMES:
        return SIGNAL_NAMES[int(e.group(1))]
    return None


def short_path(path: str) -> str:
    """``…/site-packages/sglang/srt/x.py`` (or an unpacked ``…/sglang/srt/x.py``) → ``sglang/srt/x.py``;
    else the last two parts."""
    i = path.rfind("/nccl/")
    if i >= 0:  # NCCL's own build tree (``/dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/enqueue.cc``)
        return "nccl/" + path.rsplit("/", 1)[-1]
    for marker in ("site-packages/", "dist-packages/"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker) :]
    for pkg in _PACKAGES:
        i = path.rfind(f"/{pkg}/")
        if i >= 0:
            return path[i + 1 :]
    parts = path.rstrip("/").split("/")
    return "/".join(parts[-2:])


class CrashSite:
    """Reads the lines after a native crash; :meth:`describe` names where it happened."""

    def __init__(self, kind: str, first_line: str = "") -> None:
        self.kind = kind
        self.native: str | None = None
        self.python: str | None = None  # innermost frame of the crashing thread
        self.any_python: str | None = None  # first frame of any thread, if no "Current thread" is seen
        self.child: str | None = None
        self._in_current = False
        self._lines = 0
        self.feed(first_line)

    @property
    def done(self) -> bool:
        return self._lines > _MAX_LINES or (self.python is not None and self.native is not None)

    def feed(self, msg: str) -> None:
        if self.done or not msg:
            return
        self._lines += 1
        head = msg[:2000]
        if self.child is None:
            c = _CHILD.search(head)
            if c:
                self.child = c.group(1)
        if _CURRENT.match(head):
            self._in_current = True
            return
        if _OTHER_THREAD.match(head):
            self._in_current = False
            return
        f = _PY_FRAME.search(head)
        if f:
            where = f"{f.group(3)} ({short_path(f.group(1))}:{f.group(2)})"
            if self._in_current and self.python is None:
                self.python = where
            if self.any_python is None:
                self.any_python = where
            return
        if self.native is None and (u := _UCX_FRAME.match(head)) is not None:
            self.native = f"{u.group(1)}() at {short_path(u.group(2))}:{u.group(3)}"
            return
        if self.native is None:
            m = _ABSL_PC.search(head) or _GDB.search(head) or _CXX.search(head)
            if m and "Fatal Python error" not in head:
                name = m.group(1)
                self.native = name if name.endswith(")") else name + "()"

    def in_nccl(self) -> bool:
        """The crashing native frame is NCCL's own code (``uploadProxyOps() at nccl/enqueue.cc:1131``, an
        ``nccl…`` symbol): the collective library crashed, an NCCL failure rather than an unexplained
        death. A Python frame that only calls into NCCL (``ncclCommInitRank`` in pynccl_wrapper.py) is
        not enough: the native site is unknown there."""
        n = self.native or ""
        return " at nccl/" in n or n.startswith("nccl")

    def describe(self) -> str:
        """``Segmentation fault in torch::…::~ProfilerResult() (native), Python at stop (sglang/…:330)``."""
        where = []
        if self.native:
            where.append(f"{self.native} (native code)")
        py = self.python or self.any_python
        if py:
            where.append(("called from " if self.native else "") + py)
        if self.child and not where:
            where.append(f"the {self.child} process")
        elif self.child:
            where.append(f"in {self.child}")
        return self.kind + (" in " + ", ".join(where) if where else "")
