"""The simulated server's child processes, doing to themselves what SGLang's do.

A real ``sglang.launch_server`` is a process tree: the main process (HTTP server and tokenizer
manager) starts one ``sglang::scheduler_TP<n>`` per tensor-parallel rank and a ``sglang::detokenizer``.
Each child renames itself with ``setproctitle``, which on Linux writes the title over the argv area
and wipes the environ area after it: ``/proc/PID/environ`` of a real scheduler reads as NUL bytes
(measured on sglang 0.5.17, ``shared/fixtures/sglang-0.5.17-h200-eagletui/outputs/
reap-environ-evidence.txt``). A tool that proves ownership by an environment variable therefore cannot
stop a real SGLang server; the simulator has to make the same mess or the tests cannot see it.

Also as in SGLang: the children die with their parent (``PR_SET_PDEATHSIG`` = SIGKILL,
``sglang/srt/utils/common.py:kill_itself_when_parent_died``), keep SIGTERM's default action (a group
SIGTERM kills them with -15), and the main process watches them (``SubprocessWatchdog``, polling every
second): a child that died with a non-zero status while the server runs is logged as ``Subprocess
scheduler_0 (pid=…) crashed with exit code -15. Triggering SIGQUIT for cleanup...`` and the server tears
itself down.

The children are forked (no second interpreter start): they only sleep, so they cost a page table each.
"""

from __future__ import annotations

import contextlib
import os
import signal

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15

# /proc/PID/stat fields after "(comm)": arg_start, arg_end, env_start, env_end (man 5 proc: 48-51)
_ARG_START, _ARG_END, _ENV_START, _ENV_END = 45, 46, 47, 48


def _prctl(option: int, arg: int) -> None:
    with contextlib.suppress(OSError, AttributeError, ImportError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)


def set_proc_title(title: str) -> bool:
    """What ``setproctitle.setproctitle(title)`` does to a Linux process, seen from outside: the title
    over the argv area (padded with spaces), the environ area zeroed, ``comm`` set. False where the
    process memory cannot be written (then only ``comm`` changed)."""
    with contextlib.suppress(OSError, AttributeError, ImportError):
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_NAME, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        arg_start, arg_end = int(fields[_ARG_START]), int(fields[_ARG_END])
        env_start, env_end = int(fields[_ENV_START]), int(fields[_ENV_END])
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            room = arg_end - arg_start
            raw = title.encode()[: max(0, room - 1)]
            mem.seek(arg_start)
            mem.write(raw + b" " * (room - 1 - len(raw)) + b"\0")
            if env_end > env_start:
                mem.seek(env_start)
                mem.write(b"\0" * (env_end - env_start))
        return True
    except (OSError, ValueError, IndexError):
        return False


def _child(title: str) -> None:
    """The child's whole life: default signal dispositions, die with the parent, rename, sleep."""
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        with contextlib.suppress(ImportError, OSError, ValueError):
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an injected SIGSEGV leaves no core file
        if os.getppid() == 1:  # the parent died before the death signal was armed
            os._exit(0)
        set_proc_title(title)
        while True:
            signal.pause()
    finally:
        os._exit(0)


def scheduler_title(tp: int, rank: int) -> str:
    """The scheduler's process title as SGLang sets it (0.5.17 ``managers/scheduler.py``,
    ``run_scheduler_process``): ``sglang::scheduler`` plus `` TP<rank>`` only when ``tp_size > 1`` (DP, PP,
    EP parts likewise only when used), spaces made ``_``. A one-GPU server's scheduler is plain
    ``sglang::scheduler``: the GPU run of 2026-12-02 found no ``sglang::scheduler_TP0`` to stop."""
    return "sglang::scheduler" + (f"_TP{rank}" if tp > 1 else "")


class Children:
    """The scheduler and detokenizer processes of one simulated server, with SGLang's names."""

    def __init__(self, tp: int, ranks: list[int] | None = None) -> None:
        ranks = ranks if ranks else list(range(max(1, tp)))  # a multi-node launch: this node's ranks
        self.names = [f"scheduler_{i}" for i in ranks] + ["detokenizer"]
        self.titles = [scheduler_title(tp, i) for i in ranks] + ["sglang::detokenizer"]
        self.pids: list[int] = []
        self.status: dict[int, int] = {}  # pid → exit code as multiprocessing reports it (-N: signal)
        self.stopping = False

    def start(self) -> None:
        if os.environ.get("EAGLETUI_SIM_CHILDREN", "1") == "0":
            return  # a knob for tests that count processes
        for title in self.titles:
            pid = os.fork()
            if pid == 0:
                _child(title)
            self.pids.append(pid)

    def crashed(self) -> tuple[str, int, int] | None:
        """(name, pid, exit code) of the first child that died with a non-zero status, reaping it."""
        for name, pid in zip(self.names, self.pids, strict=False):
            if pid not in self.status:
                try:
                    done, st = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, st = pid, 0
                if not done:
                    continue
                self.status[pid] = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
            code = self.status[pid]
            if code != 0:
                return name, pid, code
        return None

    def scheduler_stopped(self) -> bool:
        """Whether a scheduler child is stopped (SIGSTOP, SIGTSTP: state T in ``/proc/PID/stat``). A real
        scheduler so stopped runs no batch while the HTTP front end, another process, still answers; the
        engine holds its batches meanwhile (issue 31 item 9)."""
        for name, pid in zip(self.names, self.pids, strict=False):
            if not name.startswith("scheduler_") or pid in self.status:
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state in ("T", "t"):
                return True
        return False

    def kill_all(self) -> None:
        """``kill_process_tree``: SIGKILL every child (they are ours; a reused pid is excluded by the
        reaping above: a child not yet reaped cannot have had its pid reused)."""
        self.stopping = True
        for pid in self.pids:
            if pid in self.status:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in self.pids:
            if pid not in self.status:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
                self.status[pid] = -9
