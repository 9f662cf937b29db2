"""Live session recording, with secrets scrubbed before a byte reaches the disk.

Recordings get shared (bug reports, "look at this run"), so redaction happens at write time rather
than at share time: a secret that was never written cannot leak. Each line goes straight to the file
descriptor (no userspace buffer), so a crash loses at most the line being written.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eagletui.core.events import ConfigChanged, Event, LaunchStarted
from eagletui.core.profile import REDACTED, is_secret
from eagletui.session.format import LogCodec, make_header, session_filename

#: Token shapes that are secret wherever they appear (log lines, argv, messages).
_TOKEN_RE = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|AKIA[A-Z0-9]{12,}|xox[abposr]-[A-Za-z0-9-]{8,})"
)
_BEARER_RE = re.compile(r"\b(Bearer|Authorization:\s*\w+)(\s+)[^\s\"',;]+", re.I)
#: ``--api-key X`` / ``--api-key=X`` and friends, as one string (log lines, shell-joined commands).
_SECRET_FLAG = r"--(?:[a-z0-9-]*-)?(?:api-key|token|secret|password|passwd|credentials?)"
_FLAG_VALUE_RE = re.compile(rf"({_SECRET_FLAG})(=|\s+)(?:\"[^\"]*\"|'[^']*'|[^\s\"']+)", re.I)
_FLAG_ONLY_RE = re.compile(rf"^{_SECRET_FLAG}$", re.I)
#: ``HF_TOKEN=abc`` in a log line or an ``env NAME=value cmd`` argv.
_ASSIGN_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s\"',;)\]}]+)")
_NOT_A_VALUE = {"None", "null", "", REDACTED}
#: ``"api_key": "x"`` / ``api_key='x'`` as printed by the server-args line (a Python repr).
_REPR_RE = re.compile(
    r"(['\"]?\b[a-z0-9_]*(?:api_key|token|secret|password|passwd|credentials?)['\"]?\s*[:=]\s*)"
    r"(['\"])(?!None\b)[^'\"]+\2",
    re.I,
)
#: Dict keys (server args as ``api_key``/``--api-key``) whose string values are secrets. Tighter than
#: ``is_secret`` on purpose: ``tokenizer_path`` or ``max_total_tokens`` must stay readable.
_SECRET_KEY_RE = re.compile(r"(?:^|[-_])(?:api[-_]?key|token|secret|password|passwd|credentials?)$", re.I)


#: No spaces after separators: a recording is mostly log lines, and two spaces a line add up.
_SEPARATORS = (",", ":")


class Redactor:
    """Scrubs events; learns secret values from config events so later log lines that echo them
    (``Using token hf_...``) are scrubbed too."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets: set[str] = set()
        self._ordered: list[str] = []
        for s in secrets:
            self.add_secret(s)

    def add_secret(self, value: Any) -> None:
        # Very short values would redact half the log ("1", "on"); real credentials are longer.
        if isinstance(value, str) and len(value) >= 4 and value != REDACTED:
            self._secrets.add(value)
            # Longest first, so a secret containing another is replaced whole.
            self._ordered = sorted(self._secrets, key=len, reverse=True)

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    # -- text -----------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        for s in self._ordered:
            if s in text:
                text = text.replace(s, REDACTED)
        text = _TOKEN_RE.sub(REDACTED, text)
        text = _BEARER_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
        text = _FLAG_VALUE_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
        text = _REPR_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)
        text = _ASSIGN_RE.sub(
            lambda m: (
                f"{m.group(1)}={REDACTED}"
                if _secret_assignment(m.group(1)) and m.group(2).strip("'\"") not in _NOT_A_VALUE
                else m.group(0)
            ),
            text,
        )
        return text

    def argv(self, argv: list[Any]) -> list[Any]:
        """An argv list: also catches ``["--api-key", "X"]`` where flag and value are separate items."""
        out: list[Any] = []
        hide_next = False
        for item in argv:
            if hide_next and isinstance(item, str):
                out.append(REDACTED)
                hide_next = False
                continue
            hide_next = isinstance(item, str) and bool(_FLAG_ONLY_RE.match(item))
            out.append(self.value(item))
        return out

    # -- structures -----------------------------------------------------------------------------

    def value(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, str):
            if key is not None and _SECRET_KEY_RE.search(key.strip("-")) and value:
                return REDACTED
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v, k if isinstance(k, str) else None) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return self.argv(list(value))
        return value

    def _learn(self, event: Event) -> None:
        if isinstance(event, LaunchStarted):
            env = event.config.get("env") if isinstance(event.config, dict) else None
            if isinstance(env, dict):
                for name, v in env.items():
                    if isinstance(v, str) and is_secret(str(name), v):
                        self.add_secret(v)
        elif isinstance(event, ConfigChanged):
            for name, change in event.changes.items():
                if _is_secret_change(name, change):
                    for v in change if isinstance(change, list | tuple) else [change]:
                        self.add_secret(v)

    def event_dict(self, event: Event) -> dict[str, Any]:
        """The event as the dict that may be written: learned secrets and token shapes replaced."""
        self._learn(event)
        data = event.to_dict()
        if isinstance(event, LaunchStarted) and isinstance(data.get("config"), dict):
            env = data["config"].get("env")
            if isinstance(env, dict):
                data["config"] = dict(data["config"])
                data["config"]["env"] = {
                    k: (REDACTED if isinstance(v, str) and is_secret(str(k), v) else v)
                    for k, v in env.items()
                }
        if isinstance(event, ConfigChanged):
            data["changes"] = {
                k: (_redact_change(v) if _is_secret_change(k, v) else v) for k, v in data["changes"].items()
            }
        out = {}
        for k, v in data.items():
            out[k] = self.argv(v) if k == "command" and isinstance(v, list) else self.value(v, k)
        return out


def _secret_assignment(name: str) -> bool:
    """``HF_TOKEN=`` yes; ``max_total_num_tokens=`` (an sglang log staple) and ``MAX_TOKENS=`` no."""
    if name.isupper():
        return is_secret(name, "") and not re.search(r"TOKENS|TOKENIZER", name)
    return bool(_SECRET_KEY_RE.search(name))


def _is_secret_change(name: str, change: Any) -> bool:
    if not name.startswith("env:"):
        return bool(_SECRET_KEY_RE.search(name.split(":", 1)[-1].strip("-")))
    values = change if isinstance(change, list | tuple) else [change]
    env_name = name[4:]
    return is_secret(env_name, "") or any(isinstance(v, str) and is_secret(env_name, v) for v in values)


def _redact_change(change: Any) -> Any:
    if isinstance(change, list | tuple):
        return [None if v is None else REDACTED for v in change]
    return REDACTED


class Recorder:
    """Appends redacted events to a new session file (mode 0600, never overwrites an existing file).

    A write error (disk full, file removed under us) stops recording and is kept in ``error`` rather
    than raised: losing the recording must never take the live session down with it. A line that was
    only partly written is cut off again, so the file ends on a whole event.

    Log lines are written in :class:`~eagletui.session.format.LogCodec`'s compact form, which keeps a
    recording proportional to the log it holds (about 1.1x for sglang-sized lines).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        target: str,
        profile_name: str,
        secrets: Iterable[str] = (),
        created: _dt.datetime | None = None,
    ):
        self.path = Path(path)
        self.redactor = Redactor(secrets)
        self.error: str | None = None
        self.events_written = 0
        self.bytes_written = 0
        self._codec = LogCodec(self_contained=True)
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self._fd: int | None = os.open(self.path, flags, 0o600)
        header = make_header(target, profile_name, created)
        header = {k: (self.redactor.text(v) if isinstance(v, str) else v) for k, v in header.items()}
        self._write_line(header)

    @classmethod
    def create(
        cls,
        sessions_dir: str | Path | None = None,
        *,
        target: str,
        profile_name: str,
        secrets: Iterable[str] = (),
        now: _dt.datetime | None = None,
    ) -> Recorder:
        """A recorder on a fresh ``YYYYmmdd-HHMMSS-<target>.jsonl`` in ``sessions_dir``; a second
        session started in the same second gets ``-2``, ``-3``... rather than failing. Without
        ``sessions_dir`` the default from the user config's data dir is used."""
        if sessions_dir is None:
            from eagletui.config import default_sessions_dir  # late: config is only needed for the default

            sessions_dir = default_sessions_dir()
        d = Path(sessions_dir).expanduser()
        name = session_filename(target, now)
        stem = name.removesuffix(".jsonl")
        for n in range(1, 1000):
            path = d / (name if n == 1 else f"{stem}-{n}.jsonl")
            try:
                return cls(path, target=target, profile_name=profile_name, secrets=secrets)
            except FileExistsError:
                continue
        raise FileExistsError(f"no free session file name for {name} in {d}")

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, event: Event) -> None:
        """Record one event. After ``close()`` or a write error this is a silent no-op: events keep
        flowing during shutdown and must not raise into the event pump."""
        if self._fd is None:
            return
        try:
            data = self.redactor.event_dict(event)
        except Exception as exc:  # a malformed event must not stop recording of the others
            data = {
                "type": "notice",
                "level": "warning",
                "source": "recorder",
                "message": f"unrecordable event: {exc}",
            }
        with self._lock:  # the codec's state must follow the order lines reach the file
            if self._fd is None:
                return
            self._write_locked(self._codec.encode(data))
            if self._fd is not None:
                self.events_written += 1

    def _write_line(self, data: Any) -> None:
        with self._lock:
            if self._fd is not None:
                self._write_locked(data)

    def _write_locked(self, data: Any) -> None:
        assert self._fd is not None
        payload = (json.dumps(data, ensure_ascii=False, default=str, separators=_SEPARATORS) + "\n").encode(
            "utf-8"
        )
        try:
            view = memoryview(payload)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            # Disk full (or the file went away): keep what is on disk whole by cutting the partial
            # line off, and stop; the live session goes on without a recording.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.bytes_written)
            self.error = f"recording stopped: {exc.strerror or exc} ({self.path})"
            self._close_fd()
        else:
            self.bytes_written += len(payload)

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            self._close_fd()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
