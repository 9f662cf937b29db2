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
    # Every process a test starts inherits this mark; at the end of the run whatever still carries it
    # was leaked by a test (a simulator left serving after run_test, say) and is named and ended.
    import uuid

    os.environ.setdefault("EAGLETUI_TEST_SESSION", uuid.uuid4().hex)


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown (sshd, the cluster)
def pytest_sessionfinish(session, exitstatus):
    import os
    import signal

    mark = os.environ.get("EAGLETUI_TEST_SESSION", "").encode()
    if not mark or not os.path.isdir("/proc"):
        return
    leaked = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            env = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"EAGLETUI_TEST_SESSION=" + mark not in env:
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
