"""The known-acceptance pairs on the real server against their construction (issue 31): what eagletui
measured (``bench --json``: the shown, per-request and from-drafts accept, acceptance per draft position,
the per-request histogram, accept by prompt category) beside what the pair must give by how it was built
(``make_known_drafters.py``), and the server's own decode log lines beside both, each within 1 %. One JSON
line per check on stdout and one ``{"figures": …}`` line, like trained_check.py.

    python3 tools/real-sglang/pair_check.py PAIR BENCH.json PROFILE.toml [--log SERVER.log ...]
        [--pairs PAIRS_CHECK.json --qa QA.jsonl] [--label STEP]

BENCH.json may be a ``sweep --json`` output too: then each finished speculative variant's accept, every
repeat and concurrency, is checked against the construction at the variant's own steps.

PAIR is ``work`` or ``half``. PROFILE.toml is the profile the bench ran (its ``[bench] max_new_tokens`` and
``ignore_eos``: every request makes exactly that many tokens). For ``half``, PAIRS_CHECK.json is
make_known_drafters.py's report (per category, in the prompt file's order, whether the half draft predicts
each prompt's last token) and QA.jsonl the prompt file with its categories. ``--log``: the launch's
server.log (several: the ones with decode ``accept len`` lines are read, so ``--vs-no-spec``'s no-spec
half is skipped).

The expectation is exact, per request (the target repeats the prompt's last token; the draft predicts it
for every draft position or for none): a request of N tokens (greedy, ignore_eos) gets its first token
from the prefill, then a *right* request needs ``ceil((N - 1) / (steps + 1))`` verifies, each counting
``steps`` correct drafts (the real server counts the last verify's drafts in full even where
max_new_tokens cuts its tokens: tests/fixtures/real-sglang-0.5.17-pair-work), and a *wrong* one ``N - 1``
verifies of no correct draft. So per request accept is ``N / verifies`` (4.00 at steps 3 and N = 128,
2.98 at steps 2), ``1 + correct / verifies`` = steps + 1 or 1.0, and pooled figures weigh each request by
its verifies: the half pair's pooled accept is far below the mean of its two modes.
"""

from __future__ import annotations

import json
import math
import re
import sys

#: what the issue asks: eagletui against the construction and the server within 1 %
TOL = 0.01


def within(got, want, tol=TOL):
    """|got - want| <= tol × |want| (an absolute tol where want is 0)."""
    if not isinstance(got, (int, float)) or not isinstance(want, (int, float)) or math.isnan(got):
        return False
    return abs(got - want) <= tol * (abs(want) if want else 1.0)


def per_request(n_tokens: int, steps: int, right: bool) -> dict:
    """One request's verifies, correct drafts and accept lengths by construction."""
    verifies = math.ceil((n_tokens - 1) / (steps + 1)) if right else n_tokens - 1
    correct = steps * verifies if right else 0
    return {"verifies": verifies, "correct": correct, "accept": n_tokens / verifies,
            "from_drafts": 1 + correct / verifies}


def expected(steps: int, n_tokens: int, counts: dict) -> dict:
    """Pooled and per-request expectations for ``counts`` = {category: (requests, share predicted right)}."""
    r = per_request(n_tokens, steps, True)
    w = per_request(n_tokens, steps, False)
    right = sum(n * s for n, s in counts.values())
    wrong = sum(n * (1 - s) for n, s in counts.values())
    ver = right * r["verifies"] + wrong * w["verifies"]
    share = right * r["verifies"] / ver  # of the verifies, those that accept every draft
    return {
        "shown": (right + wrong) * n_tokens / ver,
        "per_request_mean": (right * r["accept"] + wrong * w["accept"]) / (right + wrong),
        "from_drafts": 1 + steps * share,
        "per_position": [share] * steps,
        "histogram": [round(wrong * w["verifies"])] + [0] * (steps - 1) + [round(right * r["verifies"])],
        "right": right, "wrong": wrong,
        "by_category": {c: s * r["accept"] + (1 - s) * w["accept"] for c, (n, s) in counts.items()},
        "request": {"right": r, "wrong": w},
    }


def log_accepts(texts) -> list[tuple[int, float]]:
    """(#running-req, accept len) of every decode line of the logs that have them."""
    rows = []
    for text in texts:
        for m in re.finditer(r"#running-req: (\d+),.*?accept len: ([0-9.]+)", text):
            rows.append((int(m.group(1)), float(m.group(2))))
    return rows


def category_flags(pairs: dict, qa_rows: list[dict]) -> tuple[dict, list[str]]:
    """{category: [half_right of each prompt]} from make_known_drafters' report, and what disagrees between
    it and the prompt file (categories, counts)."""
    flags = {c: [bool(p.get("half_right")) for p in rows] for c, rows in (pairs.get("prompts") or {}).items()}
    qa: dict[str, int] = {}
    for row in qa_rows:
        qa[str(row.get("category"))] = qa.get(str(row.get("category")), 0) + 1
    problems = [f"{c}: {len(flags.get(c, []))} in the report, {qa.get(c, 0)} in the prompt file"
                for c in sorted(set(flags) | set(qa)) if len(flags.get(c, [])) != qa.get(c, 0)]
    return flags, problems


def profile_tokens(path: str) -> tuple[int | None, bool]:
    """[bench] max_new_tokens and ignore_eos of a profile (tomllib where there is one, else the lines)."""
    text = open(path).read()
    try:
        import tomllib

        b = tomllib.loads(text).get("bench") or {}
        return b.get("max_new_tokens"), bool(b.get("ignore_eos"))
    except ImportError:  # Python < 3.11 on a device
        n = re.search(r"^max_new_tokens\s*=\s*(\d+)", text, re.M)
        return (int(n.group(1)) if n else None), bool(re.search(r"^ignore_eos\s*=\s*true", text, re.M))


def check_pair(pair, bench, *, n_tokens, ignore_eos, flags=None, flag_problems=(), logs=(), log_given=False, label=""):
    """The rows: ``{check, ok, detail}`` per check, then ``{"figures": …}``."""
    rows: list[dict] = []
    tag = f"{pair} pair{' (' + label + ')' if label else ''}"

    def out(name, ok, detail=""):
        rows.append({"check": f"{tag}: {name}", "ok": bool(ok), "detail": detail})

    acc = bench.get("accept") or {}
    defs = acc.get("definitions") or {}
    val = {k: (defs.get(k) or {}).get("value") for k in ("shown", "per_request_mean", "from_drafts", "server_log")}
    args = (bench.get("config") or {}).get("args") or {}
    steps = args.get("--speculative-num-steps")
    if not (isinstance(steps, int) and steps > 0 and isinstance(n_tokens, int) and n_tokens > 1 and ignore_eos):
        out("the run's steps and tokens per request are known (bench config, profile's [bench])", False,
            {"steps": steps, "max_new_tokens": n_tokens, "ignore_eos": ignore_eos})
        return rows
    whole = acc.get("per_request") or {}
    cats = acc.get("by_category") or {}
    if pair == "work":
        counts = {"all": (whole.get("n") or 0, 1.0)}
    else:
        flags = flags or {}
        out("the bench's categories are the prompt file's (its by_category names)", set(cats) == set(flags)
            and not flag_problems, {"bench": sorted(cats), "prompt file": sorted(flags), "problems": list(flag_problems)})
        counts = {c: ((cats.get(c) or {}).get("n") or 0, sum(f) / len(f) if f else 0.0) for c, f in flags.items()}
        out("each category's prompts fall on one side of the half draft (all right or all wrong)",
            all(s in (0.0, 1.0) for _n, s in counts.values()), {c: s for c, (_n, s) in counts.items()})
    if not sum(n for n, _s in counts.values()):
        out("the bench measured requests with per-request accept", False, {"per_request": whole, "by_category": cats})
        return rows
    exp = expected(steps, n_tokens, counts)
    for key, what in (("shown", "shown accept (pooled: Σ tokens ÷ Σ verifies)"),
                      ("per_request_mean", "per-request mean accept"),
                      ("from_drafts", "accept from drafts (1 + Σ correct ÷ Σ verifies)")):
        out(f"{what} within 1 % of the construction's", within(val[key], exp[key]),
            {"eagletui": val[key], "expected": round(exp[key], 4)})
    pos = acc.get("per_position") or []
    out("acceptance per draft position within 1 % of the construction's (every position equal)",
        len(pos) == steps and all(within(p, q) for p, q in zip(pos, exp["per_position"], strict=False)),
        {"eagletui": pos, "expected": [round(x, 4) for x in exp["per_position"]]})
    hist = acc.get("histogram") or []
    out("verifies by correct drafts (spec_correct_drafts_histogram): only none or all",
        hist == exp["histogram"], {"eagletui": hist, "expected": exp["histogram"]})
    bins = whole.get("bins") or []
    right, wrong = round(exp["right"]), round(exp["wrong"])
    two_ends = bool(bins) and bins[-1] == right and sum(bins) == right + wrong and (not wrong or bins[0] == wrong)
    out("the per-request accept histogram: right requests in its last bin, wrong ones in its first", two_ends,
        {"bins": bins, "right": right, "wrong": wrong})
    if pair == "half":
        for c, want in sorted(exp["by_category"].items()):
            got = (cats.get(c) or {}).get("mean")
            out(f"accept of the {c!r} prompts (mean per request) within 1 % of the construction's",
                within(got, want), {"eagletui": got, "expected": round(want, 4), "n": (cats.get(c) or {}).get("n")})
        out("eagletui calls the per-request accept bimodal", bool(acc.get("bimodal")) == bool(right and wrong),
            acc.get("bimodal"))
    for g in bench.get("by_concurrency") or []:
        c = g.get("concurrency")
        out(f"shown accept at concurrency {c} within 1 % of the construction's",
            within(g.get("accept_length"), exp["shown"]), {"eagletui": g.get("accept_length"),
                                                           "expected": round(exp["shown"], 4)})
    lines = log_accepts(logs)
    mine = log_checks(out, pair, steps, lines, val, exp["from_drafts"], log_given)
    rows.append({"figures": {"label": label, "pair": pair, "steps": steps, "max_new_tokens": n_tokens,
                             "eagletui": {**val, "per_position": pos, "histogram": hist, "by_category": cats,
                                          "per_request_bins": bins, "tok_s": bench.get("tok_s")},
                             "expected": {k: v for k, v in exp.items() if k != "request"},
                             "server_log": {"weighted_mean": mine, "lines": len(lines)}}})
    return rows


def log_checks(out, pair, steps, lines, val, want, log_given):
    """The server's decode lines beside the construction and eagletui; their verify-weighted mean."""
    mine = sum(n * a for n, a in lines) / sum(n for n, _a in lines) if lines else None
    if not lines:
        if log_given:
            out("the server log has decode lines with accept len", False, "none in the logs given")
        return mine
    got = {"server_log": round(mine, 4), "lines": len(lines), "expected": round(want, 4)}
    if pair == "half":
        # a line is 1 + correct ÷ verifies over its logging interval's batches, and a half run's batches
        # change mix as its right requests finish 4× sooner than its wrong ones (#running-req is the batch
        # at the line, not the interval's): the lines are no pooled figure, only bounded by the two modes
        out(f"the server's decode lines lie between 1.0 and steps + 1 = {steps + 1}",
            all(1.0 - TOL <= a <= steps + 1 + TOL for _n, a in lines), got)
        return mine
    # each line: 1 + correct ÷ verifies over a logging interval of forward passes with #running-req
    # verifies each; the work pair's every verify is the same, so every line is steps + 1
    out("the server's decode lines (weighted by #running-req) within 1 % of the construction's from-drafts",
        within(mine, want), got)
    # like for like: a decode line counts correct drafts per verify (a cut last verify in full), as
    # from_drafts does; the shown figure counts tokens (2.98 beside the line's 3.00 at steps 2, N = 128)
    out("eagletui's from-drafts accept within 1 % of the server's decode lines (the same definition)",
        within(val["from_drafts"], mine), {"eagletui": val["from_drafts"], "server_log": round(mine, 4)})
    if val["server_log"] is not None:
        out("eagletui's server_log accept within 1 % of the construction's from-drafts",
            within(val["server_log"], want), {"eagletui": val["server_log"], "expected": round(want, 4)})
    return mine


def profile_steps(path: str) -> int | None:
    """The profile's speculative-num-steps (what a sweep variant that does not set it runs)."""
    m = re.search(r"^speculative-num-steps\s*=\s*(\d+)", open(path).read(), re.M)
    return int(m.group(1)) if m else None


def check_sweep(pair, sweep, *, steps, n_tokens, ignore_eos, flags=None, label=""):
    """Each finished speculative variant of a sweep: every benchmark's accept (each repeat, each
    concurrency) within 1 % of the construction at the variant's own steps. A half sweep is taken to send
    every prompt of the file once a benchmark (the half profile's num_prompts is the file's 32)."""
    tag = f"{pair} pair{' (' + label + ')' if label else ''}"
    counts = {"all": (1, 1.0)} if pair == "work" else {
        c: (len(f), sum(f) / len(f)) for c, f in (flags or {}).items() if f}
    if not (counts and isinstance(n_tokens, int) and n_tokens > 1 and ignore_eos):
        return [{"check": f"{tag}: the sweep's tokens per request and prompts are known", "ok": False,
                 "detail": {"max_new_tokens": n_tokens, "ignore_eos": ignore_eos, "categories": sorted(counts)}}]
    rows, seen = [], []
    for v in sweep.get("variants") or []:
        settings = v.get("settings") or {}
        if "arg:--speculative-algorithm" in settings and not settings["arg:--speculative-algorithm"]:
            continue  # speculation off
        k = settings.get("arg:--speculative-num-steps", steps)
        got = [r.get("accept") for r in v.get("repeats") or [] if isinstance(r, dict)]
        seen.append({"name": v.get("name"), "state": v.get("state"), "steps": k, "accept": got})
        if v.get("state") != "done" or not isinstance(k, int):
            continue  # cut short (the sweep's own checks say so)
        want = expected(k, n_tokens, counts)["shown"]
        rows.append({"check": f"{tag}: sweep variant {v.get('name')!r} (steps {k}): every benchmark's accept "
                     "within 1 % of the construction's", "ok": bool(got) and all(within(a, want) for a in got),
                     "detail": {"eagletui": got, "expected": round(want, 4)}})
    if not rows:
        rows.append({"check": f"{tag}: the sweep finished a speculative variant to check", "ok": False, "detail": seen})
    rows.append({"figures": {"label": label, "pair": pair, "sweep": seen}})
    return rows


def main(argv):
    pair, bench_path, profile = argv[:3]
    opts: dict[str, list[str]] = {}
    key = None
    for a in argv[3:]:
        if a.startswith("--"):
            key = a[2:]
            opts.setdefault(key, [])
        elif key:
            opts[key].append(a)
    label = (opts.get("label") or [""])[0]
    try:
        bench = json.load(open(bench_path))
        n_tokens, ignore_eos = profile_tokens(profile)
        flags, problems = None, []
        if pair == "half":
            pairs = json.load(open(opts["pairs"][0]))
            qa = [json.loads(x) for x in open(opts["qa"][0]) if x.strip()]
            flags, problems = category_flags(pairs, qa)
        logs = []
        for p in opts.get("log") or []:
            text = open(p, errors="replace").read()
            if "accept len:" in text:
                logs.append(text)
    except (OSError, ValueError, KeyError, IndexError) as exc:
        print(json.dumps({"check": f"{pair} pair{' (' + label + ')' if label else ''}: inputs readable",
                          "ok": False, "detail": f"{type(exc).__name__}: {exc}"}))
        return 1
    if pair not in ("work", "half"):
        print(json.dumps({"check": f"pair_check: a known pair (work, half), not {pair!r}", "ok": False}))
        return 1
    if isinstance(bench.get("variants"), list):  # a sweep's JSON
        rows = check_sweep(pair, bench, steps=profile_steps(profile), n_tokens=n_tokens, ignore_eos=ignore_eos,
                           flags=flags, label=label)
    else:
        rows = check_pair(pair, bench, n_tokens=n_tokens, ignore_eos=ignore_eos, flags=flags,
                          flag_problems=problems, logs=logs, log_given=bool(opts.get("log")), label=label)
    for row in rows:
        print(json.dumps(row, default=str))
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
