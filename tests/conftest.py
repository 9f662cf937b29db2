"""Shared test set-up.

hypothesis is imported here, at collection time, on purpose: its pytest plugin otherwise imports it
lazily in the terminal summary, from deep inside pytest's hook stack, where CPython 3.11.7's AST
constructor can fail with "AST constructor recursion depth mismatch" while pytest rewrites asserts
(seen on runs that select no hypothesis test). Importing it early keeps that out of every run.
"""

import hypothesis  # noqa: F401
import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--faults",
        choices=("ci", "long"),
        default=None,
        help="fault suite (tests/test_fault_*.py): 'long' runs the issue's counts (50 SSH cuts, sshd "
        "down 60 s, ...); the default is the reduced CI count, or EAGLETUI_FAULTS if set",
    )


def pytest_configure(config):
    # The fault tests read EAGLETUI_FAULTS at import (their parameter lists depend on it), and their
    # subprocesses inherit it: one switch for both.
    import os

    mode = config.getoption("--faults")
    if mode:
        os.environ["EAGLETUI_FAULTS"] = mode
    config.addinivalue_line(
        "markers", "serial: timing-sensitive: runs in the 'serial' xdist group, after every other test, in three lanes"
    )
    # Every process a test starts inherits this mark; at the end of the run whatever still carries it
    # was leaked by a test (a simulator left serving after run_test, say) and is named and ended.
    # Under pytest-xdist the controller's mark is the run's; each worker extends it with its own id,
    # so a worker that finishes first ends only what its own tests leaked (never a simulator another
    # worker's test is still using), and the controller, last, ends whatever carries the run's mark.
    import uuid

    base = os.environ.setdefault("EAGLETUI_TEST_SESSION", uuid.uuid4().hex)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and not base.endswith("-" + worker):
        os.environ["EAGLETUI_TEST_SESSION"] = f"{base}-{worker}"


#: Tests that share one real resource run in one xdist group (one worker, one after another): the
#: Slurm cluster (its two nodes and one queue), Chromium (heavy, and the serve tests count its tabs),
#: and the ``serial`` tests whose timing a busy machine would distort.
_GROUPS = (
    ("slurm", lambda item: item.path.name.startswith("test_slurm_") and item.path.name != "test_slurm_units.py"),
    ("browser", lambda item: item.get_closest_marker("browser") is not None),
    ("serial", lambda item: item.get_closest_marker("serial") is not None),
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with the ``serial`` group run last, in three lanes (tests/xdist_serial.py)."""
    if config.getoption("dist") == "loadgroup":
        from tests.xdist_serial import SerialLastScheduling

        return SerialLastScheduling(config, log)
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        for name, wants in _GROUPS:
            if wants(item):
                item.add_marker(pytest.mark.xdist_group(name))
                break


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown (sshd, the cluster)
def pytest_sessionfinish(session, exitstatus):
    import os
    import signal

    mark = os.environ.get("EAGLETUI_TEST_SESSION", "").encode()
    if not mark or not os.path.isdir("/proc"):
        return
    # a worker ends its own processes (its mark exactly); the controller (no worker id) every process
    # of the run: its mark, or its mark extended by a worker's id
    own = os.environ.get("PYTEST_XDIST_WORKER") is not None
    leaked = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        if not own and _parent(int(d)) == os.getpid():
            continue  # an xdist worker of this run (its environ is the controller's): not a leak
        try:
            env = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        carried = next((e.split(b"=", 1)[1] for e in env if e.startswith(b"EAGLETUI_TEST_SESSION=")), None)
        if carried is None or not (carried == mark or (not own and carried.startswith(mark + b"-"))):
            continue
        test = next((e.split(b"=", 1)[1].decode(errors="replace") for e in env if e.startswith(b"PYTEST_CURRENT_TEST=")), "?")
        leaked.append((int(d), test))
    for pid, _ in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if leaked:
        tests = sorted({t for _, t in leaked})
        print(f"\nconftest: ended {len(leaked)} process(es) left running by: {'; '.join(tests)}")


def _parent(pid: int) -> int | None:
    try:
        return int(open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(autouse=True)
def _fast_timings(monkeypatch):
    """Every command a test runs (in this process or as a subprocess) and every app it builds waits
    with the fast profile of the one timing object (eagletui.core.timings.FAST: short polls, the same
    rules); engine objects a test builds itself get ``timings=FAST`` explicitly. A test that needs
    other waits sets EAGLETUI_TIMINGS itself."""
    monkeypatch.setenv("EAGLETUI_TIMINGS", "fast")


@pytest.fixture(autouse=True)
def _toasts_stay(monkeypatch):
    """Textual's toasts stay for the whole test: Textual expires a notification by the wall clock
    (``textual.notifications.time``; eagletui's information toasts last 4 s), so a test that read the
    toasts after a loaded machine's slow pause found them gone (the toast test failed at load 10-15).
    Textual's notification clock is set an hour back: every toast raised in the test has an hour left
    (``Notification.time_left``, which also times the toast's own removal), and what eagletui decides
    is still checked where it is decided: how many stay (``MAX_TOASTS``, enforced on each new toast)
    and the timeout each gets (``Notification.timeout``, which this leaves alone)."""
    import time

    import textual.notifications

    then = time.time() - 3600.0
    monkeypatch.setattr(textual.notifications, "time", lambda: then)


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path_factory, monkeypatch):
    """Commands the tests run record sessions (the UI, and headless bench since issue 20): into a
    throw-away data dir of each test's own, never the user's (a test that sets its own still wins),
    so one test's recordings never turn up in another's session lookup."""
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path_factory.mktemp("data")))


@pytest.fixture
def isolated_dirs(tmp_path, monkeypatch):
    """eagletui's config and data directories under the test's tmp_path (never the user's), for tests
    that write config, themes, history or sessions: ``pytestmark = pytest.mark.usefixtures("isolated_dirs")``."""
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "data"))
