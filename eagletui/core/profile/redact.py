"""One Redactor for everything eagletui shows, records or exports: secrets by what they are.

A value is secret because of where it sits or what it looks like, never because a flag's name contains
a scary substring (``--speculative-num-draft-tokens`` and ``--tokenizer-path`` are data that a run must
keep):

- the value of a known secret flag (SGLang's real table: ``--api-key``, ``--admin-api-key``,
  ``--ssl-keyfile-password``; plus a few whole names other tools use, ``--hf-token``, ``--password``),
  in ``--flag=value`` or ``--flag value`` form, a unique prefix included (argparse accepts
  ``--api SECRET``), and never the next argument after a switch;
- the value of a credential-named env var or key (``HF_TOKEN``, ``*_API_KEY``, ``*_SECRET*``,
  ``*_PASSWORD``, credential ``*_TOKEN``; dests such as ``api_key`` in the server-args line);
- a token-shaped string anywhere (``hf_…``, ``sk-…``, ``ghp_…``, AWS key ids, JWTs, ``Bearer x``,
  ``Authorization:`` headers, ``scheme://user:password@``), and a long random-looking string right after
  a credential word.

Every value found this way is *learnt*: later text that merely echoes it (``Invalid API key provided:
SECRET``) is scrubbed too. The redactor is pure (no I/O) so the session model, the recorder, exports and
headless commands all share it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eagletui.core.servers.sglang_flagtable import ALL_FLAGS, SECRET_DESTS, SWITCHES
from eagletui.core.servers.sglang_flagtable import SECRET_FLAGS as SGLANG_SECRET_FLAGS

REDACTED = "***"

#: Whole flag names of other tools (custom bench commands, pasted commands) whose value is a credential.
OTHER_SECRET_FLAGS: frozenset[str] = frozenset(
    {
        "--token",
        "--hf-token",
        "--api-token",
        "--auth-token",
        "--access-token",
        "--password",
        "--passwd",
        "--secret",
        "--client-secret",
        "--secret-key",
        "--openai-api-key",
        "--aws-secret-access-key",
    }
)
SECRET_FLAGS: frozenset[str] = SGLANG_SECRET_FLAGS | OTHER_SECRET_FLAGS

#: Env names that are credentials whatever the patterns below say.
SECRET_ENV_NAMES: frozenset[str] = frozenset(
    {
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACE_HUB_TOKEN",
        "HUGGINGFACE_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "WANDB_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "NGC_API_KEY",
        "MODELSCOPE_API_TOKEN",
        "PGPASSWORD",
        "MYSQL_PWD",
    }
)

#: ``X_TOKEN`` is a credential unless X says it counts or names a vocabulary token (``BOS_TOKEN``,
#: ``MAX_NEW_TOKEN``, an event's ``cached_token``).
_NOT_CREDENTIAL_TOKEN = frozenset(
    "BOS EOS PAD UNK SEP CLS MASK START END STOP SPECIAL NUM MAX MIN NEW CACHED DRAFT PER FIRST LAST NEXT "
    "IMAGE VIDEO AUDIO THINK TOOL IM OUTPUT INPUT PROMPT TOTAL GEN DECODE PREFILL SAMPLED ACCEPTED BONUS "
    "COUNT TARGET VOCAB".split()
)

#: Values that are not secrets even in a secret position (an unset ``api_key=None``).
_NOT_A_VALUE = frozenset({"", "None", "none", "null", "NULL", "nil", REDACTED, "<redacted>"})

_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{16,}"
    r"|sk-[A-Za-z0-9][A-Za-z0-9_-]{15,}"
    r"|gh[pousr]_[A-Za-z0-9]{16,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{16,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{2,}"
    r")"
)
#: Cheap pre-checks: most log lines hold none of these, and then the costlier patterns are skipped.
_SHAPE_HINT = re.compile(r"hf_|sk-|gh[pousr]_|github_pat_|glpat-|xox|AKIA|ASIA|eyJ")
_NAME_HINT = re.compile(r"key|token|secret|passw|pwd|watermark", re.I)
_BEARER_RE = re.compile(r"\b(Bearer)(\s+)([A-Za-z0-9._~+/=-]{2,})", re.I)
_AUTH_HEADER_RE = re.compile(
    r"(\bauthorization['\"]?\s*[:=]\s*['\"]?)(?:(Bearer|Basic|Token|Digest)(\s+))?([^\s'\",;]+)", re.I
)
_URL_CRED_RE = re.compile(r"\b([a-z][a-z0-9+.-]*://[^\s/:@'\"]+):([^\s/@'\"]+)@", re.I)
#: An unquoted value stops at a closing bracket: ``[--api-key API_KEY]`` in a usage message.
_FLAG_VALUE_RE = re.compile(r"(--[A-Za-z0-9][A-Za-z0-9-]*)(=|[ \t]+)(?!--)(\"[^\"]*\"|'[^']*'|[^\s\"'\])}]+)")
#: ``NAME=value``, ``name='value'``, ``"name": "value"``, ``api_key: value``.
#: The key part is matched on its own (not consuming a value) so ``a=ServerArgs(api_key='x')`` still
#: reaches ``api_key``.
_ASSIGN_KEY_RE = re.compile(r"(?<![A-Za-z0-9_$])(['\"]?)([A-Za-z_][A-Za-z0-9_.-]*)\1(\s*[:=]\s*)")
_VALUE_RE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s\"',;)\]}]+")
_CRED_WORD_RE = re.compile(
    r"\b(api[ _-]?key|token|secret|password|passwd)\b(\s*(?:is|was|[:=])?\s*)(['\"]?)([A-Za-z0-9+/_.=-]{20,})\3",
    re.I,
)


def _words(name: str) -> list[str]:
    return [w for w in name.strip().lstrip("-").upper().replace("-", "_").replace(".", "_").split("_") if w]


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """An env var or key (``HF_TOKEN``, ``api_key``, ``db.password``) whose value is a credential.

    Whole words only: ``max_total_tokens``, ``tokenizer_path``, ``new_token_ratio`` are not."""
    n = name.strip().lstrip("-").upper().replace("-", "_")
    if n in SECRET_ENV_NAMES or n.lower() in SECRET_DESTS:
        return True
    words = _words(name)
    if not words:
        return False
    if {"SECRET", "PASSWORD", "PASSWD"} & set(words):
        return True
    if words[-2:] in (["API", "KEY"], ["PRIVATE", "KEY"], ["ACCESS", "KEY"]) or words[-1] == "APIKEY":
        return True
    if words[-1] == "TOKEN":
        return len(words) == 1 or words[-2] not in _NOT_CREDENTIAL_TOKEN
    return False


@functools.lru_cache(maxsize=4096)
def resolve_flag(flag: str) -> str:
    """The SGLang flag argparse would take ``flag`` for: itself when known, else the one flag it is a
    unique prefix of (allow_abbrev), else itself."""
    if flag in ALL_FLAGS or flag in SECRET_FLAGS or len(flag) < 4:
        return flag
    matches = [f for f in ALL_FLAGS if f.startswith(flag)]
    return matches[0] if len(matches) == 1 else flag


#: For flags SGLang does not have (another server's, a wrapper's): a credential when the name ENDS in
#: one of these words (``--auth-token``, ``--access-key``), never when a word merely contains one.
_SECRET_LAST_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey"}
)
_COUNTING_WORDS = frozenset({"per", "first", "last", "next", "each", "to", "max", "num", "total"})
_SECRET_KEY_QUALIFIERS = frozenset({"api", "access", "private", "secret", "auth"})


def is_secret_flag(flag: str) -> bool:
    """``--api-key`` (also ``--api-key=x`` and the prefix ``--api``) yes; ``--max-total-tokens`` no.

    SGLang's own flags are judged by its real table (four secrets among 560); any other flag by the
    last words of its name."""
    base = flag.split("=", 1)[0]
    if not base.startswith("--"):
        return False
    resolved = resolve_flag(base)
    if resolved in SECRET_FLAGS:
        return True
    if resolved in ALL_FLAGS:
        return False
    words = [w for w in re.split(r"[-_]+", base.lower()) if w]
    if not words:
        return False
    if words[-1] == "token" and len(words) > 1 and words[-2] in _COUNTING_WORDS:
        return False  # --kt-max-deferred-experts-per-token, --bucket-time-to-first-token
    if words[-1] in _SECRET_LAST_WORDS:
        return True
    return words[-1] == "key" and len(words) > 1 and words[-2] in _SECRET_KEY_QUALIFIERS


def is_switch(flag: str) -> bool:
    """A flag that takes no value (nargs 0 in SGLang's table): the next argument is not its value."""
    return resolve_flag(flag.split("=", 1)[0]) in SWITCHES


def looks_like_token(value: str) -> bool:
    """A string shaped like a credential (``hf_…``, ``sk-…``, ``ghp_…``, an AWS key id, a JWT)."""
    return bool(_TOKEN_SHAPES.search(value or ""))


def is_secret_env(name: str, value: str = "") -> bool:
    """An env entry never shown in clear: a credential name, or a token-shaped value."""
    return is_secret_name(name) or looks_like_token(value)


def _looks_random(s: str) -> bool:
    """Long, mixed letters and digits, high entropy, not a hex digest or a path: a key, not a word."""
    if len(s) < 20 or "/" in s[:1] or re.fullmatch(r"[0-9a-fA-F-]+", s):
        return False
    if not (re.search(r"[A-Za-z]", s) and re.search(r"\d", s)):
        return False
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    entropy = -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())
    return entropy >= 3.5


def _metavar(flag: str) -> str:
    """argparse's placeholder for a flag's value (``--api-key API_KEY`` in a usage message): not a value."""
    return flag.lstrip("-").upper().replace("-", "_")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


@functools.lru_cache(maxsize=4096)
def _is_secret_key(key: str) -> bool:
    """A dict key whose value is secret: ``--api-key``, ``api_key``, ``env:HF_TOKEN``, ``arg:--api-key``."""
    from eagletui.core.profile.toggles import split_key

    kind, name = split_key(key)
    if kind is not None:
        return kind.is_secret(name)
    if key.startswith("--"):
        return is_secret_flag(key)
    return is_secret_name(key)


class Redactor:
    """Learns secret values (from a profile, an argv, an env, or text it scrubs) and replaces them, and
    anything secret-shaped, with ``***`` in text, argv lists, env dicts and nested structures."""

    #: Shorter values are not learnt: a 3-character "secret" would blank every matching word of a log.
    MIN_LEN = 4
    #: Learnt values shorter than this are replaced only as whole words (``abcd1`` not inside ``x_abcd1``).
    WORD_LEN = 8

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._ordered: tuple[str, ...] = ()
        self._re: re.Pattern[str] | None = None
        for s in secrets:
            self.learn(s)

    # -- learning ---------------------------------------------------------------------------------

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def learn(self, value: Any) -> None:
        """Remember a secret value so every later echo of it is scrubbed."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return
        value = value.strip()
        if len(value) < self.MIN_LEN or value in _NOT_A_VALUE or value in self._secrets or REDACTED in value:
            return
        self._secrets.add(value)
        ordered = sorted(self._secrets, key=len, reverse=True)  # a secret containing another goes whole
        self._ordered = tuple(ordered)
        long = [re.escape(s) for s in ordered if len(s) >= self.WORD_LEN]
        short = [re.escape(s) for s in ordered if len(s) < self.WORD_LEN]
        parts = []
        if long:
            parts.append("(?:" + "|".join(long) + ")")
        if short:
            parts.append("(?<![A-Za-z0-9_])(?:" + "|".join(short) + ")(?![A-Za-z0-9_])")
        self._re = re.compile("|".join(parts))

    add_secret = learn  # the recorder's old name

    def learn_env(self, env: Mapping[str, Any]) -> None:
        self.env(env)

    def learn_argv(self, argv: Sequence[Any]) -> None:
        self.argv(argv)

    def learn_profile(self, profile: Any) -> Redactor:
        """Learn every secret a profile holds: env, server args, its command and bench command."""
        self.env(getattr(profile, "env", {}) or {})
        self.args(getattr(profile, "args", {}) or {})
        self.argv(list(getattr(profile, "command", ()) or ()))
        bench_cmd = getattr(getattr(profile, "bench", None), "command", "")
        if isinstance(bench_cmd, str) and bench_cmd:
            self.text(bench_cmd)
        return self

    @classmethod
    def for_profile(cls, profile: Any, secrets: Iterable[str] = ()) -> Redactor:
        return cls(secrets).learn_profile(profile)

    # -- text -------------------------------------------------------------------------------------

    def _hide(self, value: str) -> bool:
        """Learn ``value`` (quotes stripped) when it is a real value; True if it should be replaced."""
        raw = _unquote(value).strip()
        if raw in _NOT_A_VALUE or raw.startswith(REDACTED) or raw.startswith("$"):
            return False
        self.learn(raw)
        return True

    def text(self, text: str) -> str:
        """``text`` with learnt secrets and secret-shaped or secret-placed values replaced."""
        if not text:
            return text
        if self._re is not None and any(s in text for s in self._ordered):
            text = self._re.sub(REDACTED, text)
        if _SHAPE_HINT.search(text):
            text = _TOKEN_SHAPES.sub(self._sub_shape, text)
        if "earer" in text or "EARER" in text:
            text = _BEARER_RE.sub(self._sub_bearer, text)
        if "uthoriz" in text or "UTHORIZ" in text:
            text = _AUTH_HEADER_RE.sub(self._sub_auth, text)
        if "://" in text:
            text = _URL_CRED_RE.sub(self._sub_url, text)
        if "--" in text:  # not behind the name hint: ``--ap X`` is ``--api-key X`` to argparse
            text = _FLAG_VALUE_RE.sub(self._sub_flag, text)
        if _NAME_HINT.search(text):  # every secret name and credential word holds one of these
            if "=" in text or ":" in text:
                text = self._assignments(text)
            text = _CRED_WORD_RE.sub(self._sub_cred_word, text)
        return text

    def _sub_shape(self, m: re.Match[str]) -> str:
        self.learn(m.group(0))
        return REDACTED

    def _sub_bearer(self, m: re.Match[str]) -> str:
        return m.group(1) + m.group(2) + REDACTED if self._hide(m.group(3)) else m.group(0)

    def _sub_auth(self, m: re.Match[str]) -> str:
        value = m.group(4)
        if value.lower() in ("bearer", "basic", "token", "digest") or not self._hide(value):
            return m.group(0)
        scheme = (m.group(2) or "") + (m.group(3) or "")
        return m.group(1) + scheme + REDACTED

    def _sub_url(self, m: re.Match[str]) -> str:
        return f"{m.group(1)}:{REDACTED}@" if self._hide(m.group(2)) else m.group(0)

    def _sub_flag(self, m: re.Match[str]) -> str:
        flag = resolve_flag(m.group(1))
        if flag not in SECRET_FLAGS or _unquote(m.group(3)) == _metavar(flag) or not self._hide(m.group(3)):
            return m.group(0)
        quote = m.group(3)[0] if m.group(3)[:1] in ("'", '"') else ""
        return f"{m.group(1)}{m.group(2)}{quote}{REDACTED}{quote}"

    def _assignments(self, text: str) -> str:
        out: list[str] = []
        pos = 0
        for m in _ASSIGN_KEY_RE.finditer(text):
            quote, name, sep = m.group(1), m.group(2), m.group(3)
            if m.start() < pos or not is_secret_name(name):
                continue
            if ":" in sep and not quote and "_" not in name:
                continue  # ``#token: 1234`` is a count; only ``"key": v`` / ``api_key: v`` are keys
            vm = _VALUE_RE.match(text, m.end())
            if vm is None or not self._hide(vm.group(0)):
                continue
            value = vm.group(0)
            vq = value[0] if value[:1] in ("'", '"') and len(value) >= 2 else ""
            out += [text[pos : m.end()], vq, REDACTED, vq]
            pos = vm.end()
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)

    def _sub_cred_word(self, m: re.Match[str]) -> str:
        if not _looks_random(m.group(4)) or not self._hide(m.group(4)):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}{m.group(3)}"

    # -- structures -------------------------------------------------------------------------------

    def argv(self, argv: Sequence[Any]) -> list[Any]:
        """An argv list: ``--api-key X`` hides X (unless X is another flag), ``--flag=X`` hides X for
        secret flags, and a switch never hides the argument after it."""
        out: list[Any] = []
        i = 0
        items = list(argv)
        while i < len(items):
            item = items[i]
            if isinstance(item, str) and item.startswith("--"):
                flag, eq, val = item.partition("=")
                if is_secret_flag(flag):
                    if eq:
                        out.append(f"{flag}={REDACTED}" if self._hide(val) else item)
                        i += 1
                        continue
                    out.append(item)
                    nxt = items[i + 1] if i + 1 < len(items) else None
                    if nxt is not None and not (isinstance(nxt, str) and nxt.startswith("--")):
                        out.append(REDACTED if self._hide(str(nxt)) else nxt)
                        i += 2
                    else:
                        i += 1
                    continue
            out.append(self.value(item))
            i += 1
        return out

    def env(self, env: Mapping[str, Any]) -> dict[str, Any]:
        """Secret-named or token-shaped env values → ``***`` (and learnt); the rest scrubbed as text."""
        out: dict[str, Any] = {}
        for k, v in env.items():
            if isinstance(v, str) and is_secret_env(str(k), v) and self._hide(v):
                out[k] = REDACTED
            else:
                out[k] = self.value(v)
        return out

    def args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """``{"--flag": value}`` (profile server args): values of secret flags → ``***``; a bare secret
        flag (``True``) stays ``True``."""
        return {k: self.value(v, str(k)) for k, v in args.items()}

    def value(self, value: Any, key: str | None = None) -> Any:
        """Any JSON-like structure; ``key`` is the dict key it sits under (secret keys hide it)."""
        if key is not None and _is_secret_key(key):
            if isinstance(value, list | tuple):
                return [None if v is None else (REDACTED if self._hide(str(v)) else v) for v in value]
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                return REDACTED if self._hide(str(value)) else value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.value(v, k if isinstance(k, str) else None) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return self.argv(value)
        return value

    # -- events -----------------------------------------------------------------------------------

    def learn_event(self, event: Any) -> None:
        """Learn the secrets an event carries before any of it is written (argv, config, server args)."""
        self.event_dict(event)

    def event_dict(self, event: Any) -> dict[str, Any]:
        """The event as the dict that may be written or shown: every secret replaced.

        Secret-bearing parts (the launch argv, config env/args, server args, config changes) are
        redacted first, so their values are learnt before free text of the same event is scrubbed."""
        data: dict[str, Any] = event.to_dict()
        first: list[str] = [k for k in ("command", "config", "args", "changes") if k in data]
        out: dict[str, Any] = {}
        for k in first:
            v = data[k]
            if k == "config" and isinstance(v, Mapping):
                cfg = dict(v)
                if isinstance(cfg.get("env"), Mapping):
                    cfg["env"] = self.env(cfg["env"])
                if isinstance(cfg.get("args"), Mapping):
                    cfg["args"] = self.args(cfg["args"])
                out[k] = self.value(cfg)
            elif k == "changes" and isinstance(v, Mapping):
                out[k] = {ck: self.value(cv, ck) for ck, cv in v.items()}
            else:
                out[k] = self.value(v, k)
        for k, v in data.items():
            if k in out or k == "type":
                continue
            # The hot path (a LogLine per log line): plain fields straight through, text scrubbed.
            if v is None or isinstance(v, bool) or (isinstance(v, int | float) and not _is_secret_key(k)):
                out[k] = v
            elif isinstance(v, str) and not _is_secret_key(k):
                out[k] = self.text(v)
            else:
                out[k] = self.value(v, k)
        return {k: out.get(k, data[k]) for k in data}
