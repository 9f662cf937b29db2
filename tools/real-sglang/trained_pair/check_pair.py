"""Offline acceptance of a trained EAGLE-3 pair (train_pair.py's output), as a real SGLang 0.5.17 server with
--speculative-num-steps K --speculative-eagle-topk 1 --speculative-num-draft-tokens K+1 and greedy requests
(temperature 0, ignore_eos) should measure it. Plain PyTorch (no transformers, no sglang).

    python3 check_pair.py PAIR_DIR [--prompts FILE ...] [--steps 3] [--max-new-tokens 128] [--out expected.json]

For each prompt ([BOS] + its tokens, as SGLang's tokenizer encodes /generate text): the target's greedy
continuation (KV cache), the target's aux hidden states over the whole sequence, every draft chain with the
draft's own argmax tokens (pairlib.draft_chains, teacher=False), then SGLang's verify loop: the first token
comes from the prefill, each verify accepts the longest prefix of the K drafts that equals the greedy
continuation plus one bonus token, until max_new_tokens. Prints (and writes with --out) a JSON with, overall
and per category: accept_length (sum completion_tokens / sum spec_verify_ct, as SGLang's meta_info and
eagletui's accept_by pool it), histogram (summed spec_correct_drafts_histogram), per_position (share of
verifies that kept draft position j: eagletui's diag_draft "reach"), conditional (position j kept given
j-1 kept), accept_rate (correct drafts / proposed drafts, SGLang's spec_accept_rate).
A prompt file's lines need "prompt" (or "text") and may have "category" (else the file's stem).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pairlib as pl  # noqa: E402


def read_prompts(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    out = []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        o = json.loads(line)
        p = o.get("prompt") or o.get("text") if isinstance(o, dict) else o
        if isinstance(p, str) and p:
            out.append({"prompt": p, "category": (o.get("category") if isinstance(o, dict) else None) or stem})
    return out


@torch.no_grad()
def greedy(tw, cfg, ids, n_new, dev):
    cache = []
    x = torch.tensor([ids], device=dev)
    lg, _ = pl.target_forward(tw, cfg, x, cache=cache, want_logits=True)
    seq = list(ids)
    nxt = int(lg[0, -1].float().argmax())
    for _ in range(n_new - 1):
        seq.append(nxt)
        lg, _ = pl.target_forward(tw, cfg, torch.tensor([[nxt]], device=dev), cache=cache, pos0=len(seq) - 1)
        nxt = int(lg[0, -1].float().argmax())
    seq.append(nxt)
    return seq


def summarize(rows, K):
    hist = [0] * (K + 1)
    comp = ver = 0
    for r in rows:
        comp += r["completion_tokens"]
        ver += r["verify_ct"]
        for i, c in enumerate(r["histogram"]):
            hist[i] += c
    tot = sum(hist)
    reach = [sum(hist[j:]) / tot for j in range(1, K + 1)] if tot else []
    cond = []
    for j in range(1, K + 1):
        prev = sum(hist[j - 1:])
        cond.append(sum(hist[j:]) / prev if prev else None)
    return {"n": len(rows), "accept_length": round(comp / ver, 4) if ver else None, "histogram": hist,
            "per_position": [round(x, 4) for x in reach],
            "conditional": [round(x, 4) if x is not None else None for x in cond],
            "accept_rate": round(sum(i * c for i, c in enumerate(hist)) / (tot * K), 4) if tot else None,
            "verify_ct": ver, "completion_tokens": comp}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pair")
    ap.add_argument("--prompts", action="append", help="JSONL prompt file(s); default PAIR/prompts.jsonl")
    ap.add_argument("--steps", type=int, default=3, help="--speculative-num-steps (topk 1)")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"],
                    help="bfloat16: the server's weights and activations (default)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many prompts per file")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    t0 = time.time()
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    if dev == "cpu" and a.threads:
        torch.set_num_threads(a.threads)
    dt = torch.bfloat16 if a.dtype == "bfloat16" else torch.float32
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(f"{a.pair}/target/tokenizer.json")
    tc, dc, tw, dw, hot = pl.load_pair(a.pair, dev, dt)
    cfg = pl.Cfg(tc)
    assert dc["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == list(pl.AUX_LAYERS)
    K = a.steps
    files = a.prompts or [f"{a.pair}/prompts.jsonl"]
    prompts = []
    for f in files:
        ps = read_prompts(f)
        prompts += ps[:a.limit] if a.limit else ps
    rows = []
    embed = tw["model.embed_tokens.weight"]
    samples = {}
    for pr in prompts:
        ids = tok.encode(pr["prompt"]).ids  # the tokenizer's post-processor puts <s> first, as on the server
        n0 = len(ids)
        seq = greedy(tw, cfg, ids, a.max_new_tokens + K + 1, dev)
        x = torch.tensor([seq], device=dev)
        _, aux = pl.target_forward(tw, cfg, x, want_logits=False)
        _, drafted = pl.draft_chains(dw, cfg, embed, aux, x, K, hot=hot, teacher=False)
        dr = [d[0].tolist() for d in drafted]
        hist = [0] * (K + 1)
        n, gen, ver = n0, 1, 0  # the prefill's token sits at position n0
        while gen < a.max_new_tokens:
            c = n - 1
            acc = 0
            for s in range(1, K + 1):
                if dr[s - 1][c] == seq[c + s + 1]:
                    acc += 1
                else:
                    break
            hist[acc] += 1
            ver += 1
            gen += acc + 1
            n += acc + 1
        out_ids = seq[n0:n0 + a.max_new_tokens]
        distinct = len({tuple(out_ids[i:i + 8]) for i in range(len(out_ids) - 7)}) / max(1, len(out_ids) - 7)
        rows.append({"category": pr["category"], "prompt_tokens": n0, "completion_tokens": a.max_new_tokens,
                     "verify_ct": ver, "histogram": hist, "distinct_8grams": round(distinct, 3)})
        samples.setdefault(pr["category"], {"prompt_tail": pr["prompt"][-160:],
                                            "continuation": tok.decode(out_ids)[:240]})
    cats = sorted({r["category"] for r in rows})
    res = {"pair": os.path.abspath(a.pair), "steps": K, "topk": 1, "num_draft_tokens": K + 1,
           "max_new_tokens": a.max_new_tokens, "dtype": a.dtype, "device": dev, "prompt_files": files,
           "overall": summarize(rows, K),
           "by_category": {c: summarize([r for r in rows if r["category"] == c], K) for c in cats},
           "distinct_8grams_by_category": {c: round(sum(r["distinct_8grams"] for r in rows if r["category"] == c)
                                                    / max(1, sum(r["category"] == c for r in rows)), 3) for c in cats},
           "samples": samples, "seconds": round(time.time() - t0, 1)}
    res["per_request"] = rows
    s = json.dumps({k: v for k, v in res.items() if k not in ("per_request", "samples")}, indent=1)
    print(s)
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)
    return res


if __name__ == "__main__":
    main()
