"""Prompt sets and the workload they define.

Two benchmark runs are only comparable if they sent the same prompts with the same sampling settings,
so the workload is resolved deterministically (fixed seed) and fingerprinted; the fingerprint travels
in BenchmarkStarted/BenchmarkResult and the run book refuses to compare runs silently when it differs.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from eagletui.core.profile.model import BenchSettings

BUILTIN_SETS: tuple[str, ...] = ("chat", "code", "long")
#: A prompt file is read whole (prompts are sampled from it): bounded, so a wrong path to a huge
#: file is an error, not the machine's memory.
MAX_PROMPT_FILE = 512 * 1024**2


class PromptSetError(ValueError):
    """The prompt set named in the profile cannot be read; raised before any request is sent."""


def _prompt_from(obj: Any) -> str | None:
    """Accept the common JSONL shapes: {"prompt"}, {"text"}, OpenAI {"messages"}, ShareGPT {"conversations"}."""
    if isinstance(obj, str):
        return obj
    if not isinstance(obj, dict):
        return None
    for key in ("prompt", "text", "input", "question"):
        if isinstance(obj.get(key), str):
            return obj[key]
    turns = obj.get("messages") or obj.get("conversations")
    if isinstance(turns, list):
        for turn in turns:
            if not isinstance(turn, dict):
                continue
            role = turn.get("role", turn.get("from"))
            content = turn.get("content", turn.get("value"))
            if role in ("user", "human") and isinstance(content, str):
                return content
    return None


def parse_jsonl(text: str, origin: str = "<prompts>") -> list[str]:
    return [p for p, _ in parse_jsonl_categories(text, origin)]


def _category(obj: Any) -> str:
    """A prompt line's own category (MT-bench's ``category``, ``type``, ``task``), "" when it has none."""
    if isinstance(obj, dict):
        for key in ("category", "type", "task"):
            v = obj.get(key)
            if isinstance(v, str) and v.strip():
                return v.strip()[:64]
    return ""


def parse_jsonl_categories(text: str, origin: str = "<prompts>") -> list[tuple[str, str]]:
    """(prompt, category) per line; the category is "" where the line names none."""
    prompts: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PromptSetError(f"{origin}:{n}: invalid JSON: {exc.msg}") from None
        prompt = _prompt_from(obj)
        if prompt is None:
            raise PromptSetError(f"{origin}:{n}: no prompt/text/messages field")
        prompts.append((prompt, _category(obj)))
    if not prompts:
        raise PromptSetError(f"{origin}: no prompts")
    return prompts


def load_prompt_set(name: str) -> list[str]:
    """A built-in set name (chat/code/long) or a path to a JSONL file."""
    return [p for p, _ in load_prompt_set_categories(name)]


def load_prompt_set_categories(name: str) -> list[tuple[str, str]]:
    """(prompt, category) of a set: a line's own category, else the set's name (``chat``, a file's stem)."""
    if name in BUILTIN_SETS:
        text = resources.files("eagletui.bench").joinpath("data", f"{name}.jsonl").read_text(encoding="utf-8")
        return [(p, c or name) for p, c in parse_jsonl_categories(text, f"builtin:{name}")]
    path = Path(name).expanduser()
    if path.exists() and not path.is_file():  # a FIFO would block the open, /dev/zero never end
        raise PromptSetError(f"prompt set {name!r}: not a regular file")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PROMPT_FILE + 1)
    except OSError as exc:
        raise PromptSetError(
            f"prompt set {name!r}: not one of {', '.join(BUILTIN_SETS)} and not a readable file ({exc.strerror})"
        ) from None
    if len(data) > MAX_PROMPT_FILE:
        raise PromptSetError(f"prompt set {name!r}: larger than {MAX_PROMPT_FILE // 1024**2} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptSetError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return [(p, c or path.stem) for p, c in parse_jsonl_categories(text, str(path))]


@dataclass(frozen=True)
class Workload:
    prompts: tuple[str, ...]
    warmup_prompts: tuple[str, ...]
    sampling: dict[str, Any]
    concurrency: int
    source: str
    fingerprint: str
    extra: dict[str, Any] = field(default_factory=dict)
    #: each prompt's category (parallel to ``prompts``; empty: none known)
    categories: tuple[str, ...] = ()

    def category(self, index: int) -> str:
        return self.categories[index] if 0 <= index < len(self.categories) else ""
    #: seconds from the start at which each prompt is sent (a Poisson process at ``request_rate``);
    #: empty: as fast as the concurrency allows
    arrivals: tuple[float, ...] = ()

    def describe(self) -> dict[str, Any]:
        """The JSON-safe summary stored in BenchmarkStarted.workload (prompts themselves are omitted)."""
        return {
            "prompts": self.source,
            "num_prompts": len(self.prompts),
            "warmup": len(self.warmup_prompts),
            "concurrency": self.concurrency,
            **self.sampling,
            **self.extra,
        }


def fingerprint(
    prompts: list[str] | tuple[str, ...],
    sampling: dict[str, Any],
    concurrency: int,
    request_rate: float = 0.0,
) -> str:
    """sha256 over prompts + sampling + concurrency (+ the request rate when one is set): concurrency
    and arrival rate change tok/s as much as the prompts do."""
    h = hashlib.sha256()
    key: dict[str, Any] = {"sampling": sampling, "concurrency": concurrency}
    if request_rate > 0:
        key["request_rate"] = request_rate
    h.update(json.dumps(key, sort_keys=True).encode())
    for p in prompts:
        h.update(b"\x00")
        h.update(p.encode("utf-8"))
    return h.hexdigest()


def build_workload(settings: BenchSettings) -> Workload:
    """Resolve the profile's [bench] into concrete prompts; same settings → same prompts, same order."""
    pool = load_prompt_set_categories(settings.prompts)
    rng = random.Random(settings.seed)
    order = list(pool)
    rng.shuffle(order)
    picked = [order[i % len(order)] for i in range(settings.num_prompts)]
    prompts = [p for p, _ in picked]
    # Warmup takes prompts from the far end of the shuffled pool so it rarely pre-fills the prefix cache
    # for the first measured requests (the cache is flushed anyway when the server allows it).
    # At least one full round at the benchmark's concurrency: the first batches of a new size pay
    # the kernels' JIT (triton on a real server: TTFT p90 717 ms cold vs ~20 ms warm, sglang 0.5.17 on
    # an H200), and one request at concurrency 1 warms none of the larger shapes.
    n_warm = max(settings.warmup, settings.concurrency) if settings.warmup > 0 else 0
    warmup = [order[-1 - (i % len(order))][0] for i in range(n_warm)]
    sampling = {
        "max_new_tokens": settings.max_new_tokens,
        "temperature": settings.temperature,
        "ignore_eos": settings.ignore_eos,
    }
    rate = float(getattr(settings, "request_rate", 0.0) or 0.0)
    arrivals: list[float] = []
    if rate > 0:
        # a Poisson process (bench_serving's --request-rate), seeded like the prompt order
        arr_rng = random.Random(settings.seed * 7 + 1)
        t = 0.0
        for _ in prompts:
            arrivals.append(t)
            t += arr_rng.expovariate(rate)
    return Workload(
        prompts=tuple(prompts),
        warmup_prompts=tuple(warmup),
        sampling=sampling,
        concurrency=settings.concurrency,
        source=settings.prompts,
        fingerprint=fingerprint(prompts, sampling, settings.concurrency, rate),
        extra={"seed": settings.seed, **({"request_rate": rate} if rate > 0 else {})},
        arrivals=tuple(arrivals),
        categories=tuple(c for _, c in picked),
    )
