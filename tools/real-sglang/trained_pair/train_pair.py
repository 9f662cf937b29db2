"""Train the tiny Llama target of tools/real-sglang/make_tiny.py on real text, then an EAGLE-3 draft head on its
hidden states, and save both as SGLang 0.5.17 loads them (so that a real server's acceptance falls with the
draft position and differs between code and prose prompts, as a real drafter's does).

    python3 train_pair.py --tiny /tmp/sgw/tiny --out /tmp/sgw/trained           # GPU: ~2-3 min on one H200
    python3 train_pair.py --tiny /tmp/tpw/tiny --out OUT --quick                # CPU test: a few minutes

--tiny is what make_tiny.py wrote (its configs and tokenizer are reused unchanged; it is built with
make_tiny.py from --make-tiny or the usual places when missing). Text: this interpreter's standard library
(code: its .py files; prose: pydoc_data/topics.py and the training files' long docstrings), held out by
whole file / topic; deterministic for --seed and a given stdlib (its sha256 goes into train_meta.json).
Writes OUT/target/ (config, bf16 safetensors, tokenizer files), OUT/draft/ (config with draft_vocab_size,
bf16 safetensors with d2t/t2d), OUT/prompts.jsonl (held-out prompts with a category), OUT/train_meta.json,
and, unless --no-check, OUT/expected.json (check_pair.py's offline acceptance).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pairlib as pl  # noqa: E402


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def ensure_tiny(tiny: str, make_tiny: str | None):
    if os.path.exists(f"{tiny}/target/tokenizer.json") and os.path.exists(f"{tiny}/draft/config.json"):
        return
    cands = [make_tiny] if make_tiny else []
    cands += [f"{HERE}/make_tiny.py", "tools/real-sglang/make_tiny.py", ".real/make_tiny.py", ".sgl/make_tiny.py"]
    for c in cands:
        if c and os.path.exists(c):
            log("making the tiny model with", c)
            subprocess.run([sys.executable, c, tiny], check=True)
            return
    sys.exit(f"no tiny model at {tiny} and no make_tiny.py found (pass --make-tiny PATH)")


def lr_at(step, total, base, warm, t0=None, t_end=None):
    """Linear warmup, then cosine to 10 %. Progress is the larger of steps done and phase time spent, so a
    phase cut short by the time budget still ends with a decayed learning rate."""
    if step < warm:
        return base * (step + 1) / warm
    t = (step - warm) / max(1, total - warm)
    if t0 is not None:
        t = max(t, (time.time() - t0) / max(1e-9, t_end - t0))
    t = min(1.0, t)
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


class Sampler:
    """Random windows of `seq` tokens from one token stream per category ([BOS] + doc per document)."""

    def __init__(self, streams: dict, seq: int, prose_frac: float, gen: torch.Generator, device):
        self.s, self.seq, self.pf, self.g, self.dev = streams, seq, prose_frac, gen, device

    def batch(self, B):
        nprose = int(round(B * self.pf))
        rows = []
        for cat, n in (("prose", nprose), ("code", B - nprose)):
            st = self.s[cat]
            starts = torch.randint(0, len(st) - self.seq - 1, (n,), generator=self.g)
            rows += [st[i:i + self.seq] for i in starts.tolist()]
        return torch.stack(rows).to(self.dev)


def tokenize_docs(tok, docs, bos=0):
    ids = []
    for _, s in docs:
        ids.append(bos)
        ids += tok.encode(s, add_special_tokens=False).ids
    return torch.tensor(ids, dtype=torch.long)


def main(argv=None):
    """One piece: the pipeline's phases in their order (corpus, target, regeneration, draft, save, check) share
    the parsed arguments, one time budget and one log; the work of each phase is in pairlib."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", default="/tmp/sgw/tiny")
    ap.add_argument("--make-tiny", default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="CPU test mode: small corpus, few steps")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--target-steps", type=int)
    ap.add_argument("--draft-steps", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--lr-target", type=float, default=3e-3)
    ap.add_argument("--lr-draft", type=float, default=3e-3)
    ap.add_argument("--code-mb", type=float, help="training code text, MB of the stdlib's .py files")
    ap.add_argument("--prose-frac", type=float, default=0.5, help="share of prose windows in a batch")
    ap.add_argument("--draft-vocab", type=int, default=256, help="draft lm_head rows (multiple of 64); 0: none, the target's lm_head (draft_vocab_size null, make_tiny's way)")
    ap.add_argument("--ttt-steps", type=int, help="draft positions trained (4, quick 3; the profile's steps 3 uses 3)")
    ap.add_argument("--regen-frac", type=float, default=0.5, help="share of draft batches from the target's own text")
    ap.add_argument("--regen-seqs", type=int, help="target-generated sequences for the draft (4096; quick 128)")
    ap.add_argument("--prompts-per-cat", type=int, help="held-out prompts per category (16; quick 8)")
    ap.add_argument("--prompt-tokens", type=int)
    ap.add_argument("--max-new-tokens", type=int, help="for the check (the eagletui profile's bench: 128)")
    ap.add_argument("--time-budget-s", type=float, help="target (60 %%) + draft training end by this; the LR schedule follows the time too (300 s; quick 900 s; 0: none)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (1: a shared 2-core box is faster so)")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast on the CPU too (tests the GPU path's dtypes)")
    ap.add_argument("--no-check", action="store_true")
    a = ap.parse_args(argv)
    q = a.quick
    a.target_steps = a.target_steps or (240 if q else 2500)
    a.draft_steps = a.draft_steps or (100 if q else 1500)
    a.batch = a.batch or (12 if q else 64)
    a.seq = a.seq or (128 if q else 384)
    a.code_mb = a.code_mb if a.code_mb is not None else (1.0 if q else 9.0)
    a.prompt_tokens = a.prompt_tokens or (40 if q else 128)
    a.max_new_tokens = a.max_new_tokens or (64 if q else 128)
    a.prompts_per_cat = a.prompts_per_cat or (8 if q else 16)
    a.ttt_steps = a.ttt_steps or (3 if q else 4)
    a.regen_seqs = a.regen_seqs or (128 if q else 4096)
    if a.time_budget_s is None:
        a.time_budget_s = 900 if q else 300
    if a.prompt_tokens * 1.3 + a.max_new_tokens + a.ttt_steps + 2 > 4096:
        sys.exit("prompt + generation past max_position_embeddings")
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    if dev == "cpu" and a.threads:
        torch.set_num_threads(a.threads)
    T0 = time.time()
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    ensure_tiny(a.tiny, a.make_tiny)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(f"{a.tiny}/target/tokenizer.json")
    tcfg_d = json.load(open(f"{a.tiny}/target/config.json"))
    dcfg_d = json.load(open(f"{a.tiny}/draft/config.json"))
    assert dcfg_d["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == list(pl.AUX_LAYERS), dcfg_d["eagle_config"]
    cfg = pl.Cfg(tcfg_d)
    assert a.draft_vocab % 64 == 0 and a.draft_vocab <= cfg.V
    shared_head = a.draft_vocab == 0  # draft_vocab_size null: SGLang gives the draft the target's lm_head

    # ---------------------------------------------------------------- corpus
    corpus = pl.build_corpus(a.seed, int(a.code_mb * 1e6))
    streams = {c: tokenize_docs(tok, corpus["train"][c]) for c in ("code", "prose")}
    ev_streams = {c: tokenize_docs(tok, corpus["eval"][c]) for c in ("code", "prose")}
    prompts = pl.make_prompts(corpus, tok, a.prompts_per_cat, a.prompt_tokens, a.seed)
    meta = {"seed": a.seed, "quick": q, "device": dev, "torch": torch.__version__, "python": sys.version.split()[0],
            "args": vars(a),
            "corpus": {"stdlib": corpus["root"], "sha256": corpus["sha256"],
                       "train_docs": {c: len(corpus["train"][c]) for c in streams},
                       "train_chars": {c: sum(len(s) for _, s in corpus["train"][c]) for c in streams},
                       "train_tokens": {c: len(v) for c, v in streams.items()},
                       "eval_docs": {c: [n for n, _ in corpus["eval"][c]] for c in streams},
                       "eval_tokens": {c: len(v) for c, v in ev_streams.items()}},
            "prompts": {c: sum(p["category"] == c for p in prompts) for c in ("code", "prose")}}
    log("corpus", json.dumps(meta["corpus"]["train_tokens"]), "eval", json.dumps(meta["corpus"]["eval_tokens"]),
        "prompts", meta["prompts"], f"({time.time() - T0:.1f}s)")
    timed = a.time_budget_s > 0  # 0: no budget, the schedule by steps alone (reproducible on one machine)
    budget_end = time.time() + a.time_budget_s if timed else float("inf")
    # bf16 autocast on the GPU (fp32 master weights); plain fp32 on the CPU unless --amp
    amp = torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda" or a.amp)

    # ---------------------------------------------------------------- target
    tw = {k: v.to(dev).requires_grad_(True) for k, v in pl.init_target(cfg, gen).items()}
    decay = [v for k, v in tw.items() if v.ndim == 2 and "embed" not in k]
    nodecay = [v for k, v in tw.items() if v.ndim == 1 or "embed" in k]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr_target, betas=(0.9, 0.95), **({"fused": True} if dev == "cuda" else {}))
    sam = Sampler(streams, a.seq, a.prose_frac, gen, dev)
    t1 = time.time()
    tsteps = a.target_steps
    tbudget = t1 + (budget_end - t1) * 0.6  # leave time for the draft
    losses = []
    for step in range(tsteps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, tsteps, a.lr_target, max(10, tsteps // 20), *((t1, tbudget) if timed else ()))
        ids = sam.batch(a.batch)
        with amp:
            logits, _ = pl.target_forward(tw, cfg, ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.V), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(tw.values()), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % max(1, tsteps // 10) == 0 or step == tsteps - 1:
            log(f"target step {step}/{tsteps} loss {sum(losses[-20:]) / len(losses[-20:]):.3f} ({time.time() - t1:.0f}s)")
        if time.time() > tbudget:
            log(f"target: time budget reached at step {step + 1}")
            tsteps = step + 1
            break
    meta["target"] = {"steps": tsteps, "seconds": round(time.time() - t1, 1),
                      "train_loss_last": round(sum(losses[-20:]) / len(losses[-20:]), 4)}
    for v in tw.values():
        v.requires_grad_(False)
    # the server runs bf16 weights: the draft learns the bf16 target's hidden states
    twb = {k: v.to(torch.bfloat16).float() for k, v in tw.items()}

    @torch.no_grad()
    def eval_target(c, n=8):
        st = ev_streams[c]
        L = min(a.seq, len(st) // n - 1)
        ids = torch.stack([st[i * L:(i + 1) * L] for i in range(n)]).to(dev)
        with amp:
            lg, _ = pl.target_forward(twb, cfg, ids[:, :-1])
        return F.cross_entropy(lg.float().reshape(-1, cfg.V), ids[:, 1:].reshape(-1)).item()
    meta["target"]["heldout_loss"] = {c: round(eval_target(c), 4) for c in ("code", "prose")}
    log("target held-out loss", meta["target"]["heldout_loss"])

    # ---------------------------------------------------------------- draft vocabulary
    counts = torch.zeros(cfg.V, dtype=torch.long)
    for st in streams.values():
        counts += torch.bincount(st, minlength=cfg.V)[:cfg.V]
    top = counts.argsort(descending=True)[:a.draft_vocab or cfg.V]
    draft_ids = top.sort().values  # ascending target ids, as SpecForge writes d2t
    coverage = counts[draft_ids].sum().item() / counts.sum().item()
    d2t = draft_ids - torch.arange(len(draft_ids))
    t2d = torch.zeros(cfg.V, dtype=torch.bool)
    t2d[draft_ids] = True
    hot = draft_ids.to(dev)
    meta["draft_vocab"] = {"size": a.draft_vocab or None, "train_token_coverage": round(coverage, 5),
                           "lm_head": "the target's (frozen, not saved)" if shared_head else "the draft's own"}

    # ---------------------------------------------------------------- the target's own text for the draft
    # EAGLE drafters are trained on the target's own generations: the server measures acceptance on what the
    # target generates greedily, not on the corpus. Half of each draft batch (--regen-frac) is a corpus
    # window's first half continued greedily by the (bf16) target.
    t_r = time.time()
    n_regen = a.regen_seqs if a.regen_frac > 0 else 0
    regen = []
    P = a.seq // 2
    gb = 256 if dev == "cuda" else 16
    with amp:
        for i in range(0, n_regen, gb):
            pr = sam.batch(min(gb, n_regen - i))[:, :P]
            regen.append(pl.greedy_batch(twb, cfg, pr, a.seq - P).cpu())
    regen = torch.cat(regen) if regen else None
    if regen is not None:
        cont = regen[:, P:]
        d8 = sum(len({tuple(r[j:j + 8]) for j in range(len(r) - 7)}) / (len(r) - 7) for r in cont.tolist()) / len(cont)
        meta["regen"] = {"seqs": n_regen, "prompt_tokens": P, "new_tokens": a.seq - P, "frac": a.regen_frac,
                         "distinct_8grams": round(d8, 3), "seconds": round(time.time() - t_r, 1),
                         "sample": tok.decode(regen[0, P:P + 80].tolist())}
        log(f"regenerated {n_regen} sequences in {time.time() - t_r:.1f}s, distinct 8-grams {d8:.3f}:",
            repr(meta["regen"]["sample"]))

    # ---------------------------------------------------------------- draft
    dw = {k: v.to(dev).requires_grad_(not (shared_head and k == "lm_head.weight"))
          for k, v in pl.init_draft(cfg, twb, draft_ids, gen).items()}
    decay = [v for k, v in dw.items() if v.ndim == 2 and v.requires_grad]
    nodecay = [v for k, v in dw.items() if v.ndim == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr_draft, betas=(0.9, 0.95), **({"fused": True} if dev == "cuda" else {}))
    embed = twb["model.embed_tokens.weight"]
    S = a.ttt_steps
    sw = [0.8 ** s for s in range(S)]
    t2 = time.time()
    dsteps = a.draft_steps
    dl, dacc = [], []
    for step in range(dsteps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, dsteps, a.lr_draft, max(10, dsteps // 20), *((t2, budget_end) if timed else ()))
        nr = int(round(a.batch * a.regen_frac)) if regen is not None else 0
        ids = sam.batch(a.batch - nr)
        if nr:
            pick = torch.randint(0, len(regen), (nr,), generator=gen)
            ids = torch.cat([ids, regen[pick].to(dev)])
        T = ids.shape[1]
        with torch.no_grad(), amp:
            tl, aux = pl.target_forward(twb, cfg, ids)
            tp = tl.float().softmax(-1)[..., hot]  # target probs on the draft vocabulary
            targ = tl.argmax(-1)
        with amp:
            outs, _ = pl.draft_chains(dw, cfg, embed, aux.float() if dev == "cpu" else aux, ids, S, teacher=True)
        loss, accs = 0.0, []
        for s, lg in enumerate(outs, start=1):
            n = T - s  # chains 0..T-1-s have a label (target logits at position c+s)
            lp = lg[:, :n].float().log_softmax(-1)
            loss = loss + sw[s - 1] * -(tp[:, s:s + n] * lp).sum(-1).mean()
            accs.append((hot[lg[:, :n].argmax(-1)] == targ[:, s:s + n]).float().mean().item())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(dw.values()), 1.0)
        opt.step()
        dl.append(loss.item())
        dacc.append(accs)
        if step % max(1, dsteps // 10) == 0 or step == dsteps - 1:
            m = [round(sum(x[i] for x in dacc[-20:]) / len(dacc[-20:]), 3) for i in range(S)]
            log(f"draft step {step}/{dsteps} loss {sum(dl[-20:]) / len(dl[-20:]):.3f} top1-vs-target by step {m} "
                f"({time.time() - t2:.0f}s)")
        if time.time() > budget_end:
            log(f"draft: time budget reached at step {step + 1}")
            dsteps = step + 1
            break
    meta["draft"] = {"steps": dsteps, "seconds": round(time.time() - t2, 1), "ttt_steps": S,
                     "train_loss_last": round(sum(dl[-20:]) / len(dl[-20:]), 4),
                     "train_top1_by_step_teacher_forced": [round(sum(x[i] for x in dacc[-20:]) / len(dacc[-20:]), 4)
                                                           for i in range(S)]}

    # ---------------------------------------------------------------- save
    from safetensors.torch import save_file
    out = a.out
    for part in ("target", "draft"):
        os.makedirs(f"{out}/{part}", exist_ok=True)
    for f in os.listdir(f"{a.tiny}/target"):
        if f != "model.safetensors":
            shutil.copy(f"{a.tiny}/target/{f}", f"{out}/target/{f}")
    save_file(pl.to_bf16({k: v.cpu() for k, v in tw.items()}), f"{out}/target/model.safetensors", metadata={"format": "pt"})
    dsave = pl.to_bf16({k: v.cpu() for k, v in dw.items() if not (shared_head and k == "lm_head.weight")})
    if not shared_head:
        dsave["d2t"] = d2t.to(torch.int64).contiguous()
        dsave["t2d"] = t2d.contiguous()
    save_file(dsave, f"{out}/draft/model.safetensors", metadata={"format": "pt"})
    dcfg_d = dict(dcfg_d, draft_vocab_size=a.draft_vocab or None)
    json.dump(dcfg_d, open(f"{out}/draft/config.json", "w"), indent=1)
    with open(f"{out}/prompts.jsonl", "w") as f:
        for p in prompts:
            f.write(json.dumps({"prompt": p["prompt"], "category": p["category"], "source": p["source"]}) + "\n")
    meta["seconds_total_training"] = round(time.time() - T0, 1)
    meta["bytes"] = {p: sum(os.path.getsize(f"{out}/{p}/{f}") for f in os.listdir(f"{out}/{p}")) for p in ("target", "draft")}
    json.dump(meta, open(f"{out}/train_meta.json", "w"), indent=1)
    log(f"saved to {out}: target {meta['bytes']['target']} B, draft {meta['bytes']['draft']} B, "
        f"{meta['seconds_total_training']}s")
    if not a.no_check:
        import check_pair
        check_pair.main([out, "--max-new-tokens", str(a.max_new_tokens), "--device", dev,
                         "--out", f"{out}/expected.json"])
    log(f"all done in {time.time() - T0:.1f}s")


if __name__ == "__main__":
    main()
