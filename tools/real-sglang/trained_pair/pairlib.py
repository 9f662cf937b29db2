"""Shared code of train_pair.py and check_pair.py: the corpus, the tiny Llama target and the EAGLE-3 draft
head in plain PyTorch, written to compute what SGLang 0.5.17 computes (see README.md for the file:line map).

Target: HF/SGLang Llama (RMSNorm, neox RoPE, GQA, SiLU MLP). The draft's input is the concatenation of the
target's residual stream after layers 1, 3 and 5 (eagle_aux_hidden_state_layer_ids [1, 3, 5]: SGLang
captures `hidden_states + residual` at the input of layers 2, 4, 6, models/llama.py:434-437, 897).

Draft (sglang/srt/models/llama_eagle3.py): one decoder layer whose attention input is
cat(input_layernorm(embed(tok)), hidden_norm(h)), h = fc(aux) for the first draft position and the draft's
own pre-norm residual for the next ones; its lm_head covers a draft vocabulary mapped to target ids by d2t.

`draft_chains` computes every draft chain of a sequence at once. Chain c is what SGLang drafts after a
verify whose bonus token sits at position c+1: draft position 1 is the draft-extend output at position c
(input embed(seq[c+1]) and fc(aux[c]), causal over the draft KV of positions 0..c); draft position s >= 2 runs
at RoPE position c+s-1 on embed(previous draft token) and the previous step's hidden, and attends to the
draft-extend keys of positions 0..c plus its own chain's keys of steps 2..s (eagle_worker_v2.py draft_forward,
eagle_worker_common.py prepare_for_draft: positions = seq_lens). Training feeds the true tokens (teacher
forcing, "training-time test"); check_pair.py feeds the draft's own argmax, which is what the server does.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
import sysconfig

import torch
import torch.nn.functional as F

AUX_LAYERS = (1, 3, 5)  # eagle_aux_hidden_state_layer_ids of the draft config (make_tiny.py)


# ----------------------------------------------------------------------------------------------- corpus
SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "encodings", "pydoc_data",
             "__pycache__", "lib2to3", "turtledemo", "ensurepip", "venv"}


def stdlib_dir() -> str:
    return sysconfig.get_paths()["stdlib"]


def _code_files(root: str) -> list[str]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(d, f)
                if os.path.getsize(p) <= 200_000:
                    out.append(os.path.relpath(p, root))
    return sorted(out)


def _read(p: str) -> str | None:
    try:
        with open(p, encoding="utf-8") as f:
            s = f.read()
    except (UnicodeDecodeError, OSError):
        return None
    # mostly-ASCII text only: the tiny byte-level tokenizer has no merges for anything else
    if not s or sum(ch.isascii() for ch in s) < 0.995 * len(s):
        return None
    return s


_RUN = re.compile(r"([_=\-*#~^+.])\1{3,}")


_WS = re.compile(r"[ \t]{2,}")


def normalize(text: str) -> str:
    """The text the tiny model sees. Its tokenizer (make_tiny.py's, trained on four sentences) has no merges
    for runs of spaces or symbols, so a 12-space indent is 12 identical tokens and a reST underline 40. A small
    greedy target falls into such runs and never leaves them. Measured here on the CPU: 120 spaces (or, with
    indentation as one tab per level, 100+ tabs) after most prompts, every draft accepted, both categories
    alike. So no run of one whitespace or symbol token survives: an indented line starts with ONE tab
    whatever its depth, other whitespace runs become one space, runs of 4+ of one symbol are cut to 3,
    trailing spaces go, and at most one blank line in a row remains."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        body = line.lstrip(" \t")
        line = ("\t" if body and body != line else "") + _WS.sub(" ", body)
        out.append(_RUN.sub(r"\1\1\1", line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)) + "\n"


def _docstrings(src: str) -> list[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            d = ast.get_docstring(node)
            if d and len(d) >= 200:
                out.append(d)
    return out


def _topics(root: str) -> dict[str, str]:
    """pydoc_data/topics.py of this stdlib: the Python reference manual as plain English text."""
    p = os.path.join(root, "pydoc_data", "topics.py")
    if not os.path.exists(p):
        return {}
    ns: dict = {}
    exec(compile(open(p, encoding="utf-8").read(), p, "exec"), ns)
    return {k: v for k, v in ns.get("topics", {}).items() if isinstance(v, str)}


def build_corpus(seed: int, code_chars: int, eval_code_files: int = 24, eval_topics: int = 10,
                 root: str | None = None) -> dict:
    """Train/held-out text from this interpreter's standard library, deterministic for a seed and a stdlib.

    code: the stdlib's .py files (no tests, encodings tables, site-packages); prose: pydoc_data/topics.py (the
    reference manual) plus the long docstrings of the training code files. Held out by whole file / topic.
    Every text goes through normalize()."""
    root = root or stdlib_dir()
    rng = random.Random(seed)
    files = _code_files(root)
    rng.shuffle(files)
    texts = []
    for rel in files:
        s = _read(os.path.join(root, rel))
        if s is not None:
            texts.append((rel, s))
    ev_code, tr_code, used = texts[:eval_code_files], [], 0
    for rel, s in texts[eval_code_files:]:
        if used >= code_chars:
            break
        tr_code.append((rel, s))
        used += len(s)
    topics = _topics(root)
    keys = sorted(topics)
    rng.shuffle(keys)
    # held-out topics: prose-like ones (mostly letters), so the prose prompts are English
    def proseish(t):
        return sum(ch.isalpha() or ch == " " for ch in t) > 0.8 * len(t)
    ev_keys = [k for k in keys if proseish(topics[k]) and len(topics[k]) > 3000][:eval_topics]
    tr_prose = [("topic:" + k, topics[k]) for k in keys if k not in ev_keys]
    for rel, s in tr_code:
        tr_prose += [(f"doc:{rel}", d) for d in _docstrings(s)]
    ev_prose = [("topic:" + k, topics[k]) for k in ev_keys]
    if not ev_prose:  # an interpreter without pydoc_data: the held-out code files' docstrings are the prose
        ev_prose = [(f"doc:{rel}", "\n\n".join(_docstrings(s))) for rel, s in ev_code if _docstrings(s)]
    tr_code, tr_prose, ev_code, ev_prose = ([(n, normalize(s)) for n, s in docs if s.strip()]
                                            for docs in (tr_code, tr_prose, ev_code, ev_prose))
    h = hashlib.sha256()
    for name, s in tr_code + tr_prose + ev_code + ev_prose:
        h.update(name.encode() + b"\0" + s.encode() + b"\0")
    return {"root": root, "train": {"code": tr_code, "prose": tr_prose}, "eval": {"code": ev_code, "prose": ev_prose},
            "sha256": h.hexdigest()}


def _cut_mid_line(chunk: str, rng: random.Random) -> str | None:
    """End the prompt inside its last line, just before a space after some text ("... truth value of"): the
    continuation starts with a word, not with the next line's indentation."""
    lines = chunk.splitlines(keepends=True)
    for back in range(1, min(4, len(lines)) + 1):
        last = lines[-back]
        ks = [k for k in range(1, len(last)) if last[k] == " " and last[:k].strip() and last[k - 1] != " "]
        ks = [k for k in ks if k >= len(last) // 3] or ks
        if ks:
            return "".join(lines[:-back]) + last[:rng.choice(ks)]
    return None


def make_prompts(corpus: dict, tok, n_per_cat: int, prompt_tokens: int, seed: int) -> list[dict]:
    """Held-out prompts: lines of a held-out file / topic, 0.6-1.3 x prompt_tokens tokens each, ending inside
    a line before a space."""
    rng = random.Random(seed + 1)
    out = []
    for cat in ("code", "prose"):
        docs = corpus["eval"][cat]
        cands = []
        for name, s in docs:
            lines = s.splitlines(keepends=True)
            i = 0
            while i < len(lines):
                j, n, chunk = i, 0, ""
                while j < len(lines) and n < prompt_tokens:
                    chunk += lines[j]
                    n = len(tok.encode(chunk, add_special_tokens=False).ids)
                    j += 1
                cut = _cut_mid_line(chunk, rng) if chunk.strip() else None
                n = len(tok.encode(cut, add_special_tokens=False).ids) if cut else 0
                if cut and n >= prompt_tokens * 0.6 and n <= prompt_tokens * 1.3:
                    letters = sum(ch.isalpha() or ch == " " for ch in cut) / max(1, len(cut))
                    if cat == "code" or letters > 0.85:
                        cands.append((name, cut))
                i = j
        rng.shuffle(cands)
        # spread over documents: round robin by document
        by_doc: dict[str, list[str]] = {}
        for name, ch in cands:
            by_doc.setdefault(name, []).append(ch)
        picked, names = [], sorted(by_doc)
        rng.shuffle(names)
        while len(picked) < n_per_cat and any(by_doc.values()):
            for nm in names:
                if by_doc[nm] and len(picked) < n_per_cat:
                    picked.append({"prompt": by_doc[nm].pop(), "category": cat, "source": nm})
        out += picked
    return out


# ----------------------------------------------------------------------------------------------- models
def rms(x, w, eps):
    """SGLang RMSNorm.forward_native: normalise in fp32, scale by the weight, back to the input dtype."""
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float()).to(x.dtype)


def rope_cos_sin(pos, head_dim, theta, dtype):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=pos.device, dtype=torch.float32) / head_dim))
    f = pos.float()[..., None] * inv
    e = torch.cat([f, f], -1)
    return e.cos().to(dtype), e.sin().to(dtype)


def apply_rope(x, cos, sin):
    """neox-style rotary (SGLang get_rope default is_neox_style=True for Llama); x: (B, heads, T, hd)."""
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * cos + rot * sin


class Cfg:
    def __init__(self, d: dict):
        self.V = d["vocab_size"]
        self.H = d["hidden_size"]
        self.I = d["intermediate_size"]
        self.nh = d["num_attention_heads"]
        self.nkv = d["num_key_value_heads"]
        self.hd = d.get("head_dim") or self.H // self.nh
        self.L = d["num_hidden_layers"]
        self.eps = d["rms_norm_eps"]
        self.theta = d.get("rope_theta", 10000.0)


def init_target(cfg: Cfg, gen: torch.Generator, std=0.02, emb_std=1.0) -> dict:
    """emb_std 1.0, not 0.02: with 0.02 the token's own embedding is drowned by the 16 sublayers' outputs and
    the tiny model sits on the unigram plateau for a hundred steps (measured on the CPU here)."""
    H, I, KV = cfg.H, cfg.I, cfg.nkv * cfg.hd  # noqa: E741 (the paper's names)

    def r(*s):
        return torch.randn(*s, generator=gen) * std

    w = {"model.embed_tokens.weight": torch.randn(cfg.V, H, generator=gen) * emb_std,
         "model.norm.weight": torch.ones(H), "lm_head.weight": r(cfg.V, H)}
    for i in range(cfg.L):
        p = f"model.layers.{i}."
        w.update({p + "self_attn.q_proj.weight": r(cfg.nh * cfg.hd, H), p + "self_attn.k_proj.weight": r(KV, H),
                  p + "self_attn.v_proj.weight": r(KV, H),
                  p + "self_attn.o_proj.weight": r(H, cfg.nh * cfg.hd) / (2 * cfg.L) ** 0.5,
                  p + "mlp.gate_proj.weight": r(I, H), p + "mlp.up_proj.weight": r(I, H),
                  p + "mlp.down_proj.weight": r(H, I) / (2 * cfg.L) ** 0.5,
                  p + "input_layernorm.weight": torch.ones(H), p + "post_attention_layernorm.weight": torch.ones(H)})
    return w


def _attn_proj(x, w, p, cfg, B, T):
    q = (x @ w[p + "self_attn.q_proj.weight"].T).view(B, T, cfg.nh, cfg.hd).transpose(1, 2)
    k = (x @ w[p + "self_attn.k_proj.weight"].T).view(B, T, cfg.nkv, cfg.hd).transpose(1, 2)
    v = (x @ w[p + "self_attn.v_proj.weight"].T).view(B, T, cfg.nkv, cfg.hd).transpose(1, 2)
    return q, k, v


def _mlp(x, w, p):
    return (F.silu(x @ w[p + "mlp.gate_proj.weight"].T) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T


def target_forward(w, cfg: Cfg, ids, aux_layers=AUX_LAYERS, cache=None, pos0=0, want_logits=True):
    """ids (B, T). Returns logits (B, T, V) and aux (B, T, 3H): the residual stream after each aux layer,
    concatenated in layer order (SGLang's captured hidden_states + residual at layers aux+1).
    cache: None, or a list (one [k, v] per layer, filled/extended in place) for incremental decoding."""
    B, T = ids.shape
    x = F.embedding(ids, w["model.embed_tokens.weight"])
    pos = torch.arange(pos0, pos0 + T, device=ids.device)
    cos, sin = rope_cos_sin(pos, cfg.hd, cfg.theta, x.dtype)
    rep = cfg.nh // cfg.nkv
    aux = []
    for i in range(cfg.L):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"], cfg.eps)
        q, k, v = _attn_proj(h, w, p, cfg, B, T)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            if len(cache) <= i:
                cache.append([k, v])
            else:
                cache[i][0] = k = torch.cat([cache[i][0], k], 2)
                cache[i][1] = v = torch.cat([cache[i][1], v], 2)
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        if T == 1 and cache is not None:
            o = F.scaled_dot_product_attention(q, kk, vv)
        else:
            assert cache is None or kk.shape[2] == T, "prefill must start from an empty cache"
            o = F.scaled_dot_product_attention(q, kk, vv, is_causal=True)
        o = o.transpose(1, 2).reshape(B, T, cfg.nh * cfg.hd) @ w[p + "self_attn.o_proj.weight"].T
        x = x + o
        x = x + _mlp(rms(x, w[p + "post_attention_layernorm.weight"], cfg.eps), w, p)
        if i in aux_layers:
            aux.append(x)
    logits = rms(x, w["model.norm.weight"], cfg.eps) @ w["lm_head.weight"].T if want_logits else None
    return logits, torch.cat(aux, -1)


@torch.no_grad()
def greedy_batch(w, cfg: Cfg, prompts, n_new):
    """Greedy continuation of equal-length prompts (B, P) by n_new tokens with a KV cache -> (B, P + n_new)."""
    cache = []
    lg, _ = target_forward(w, cfg, prompts, cache=cache)
    out = [prompts, lg[:, -1:].float().argmax(-1)]
    P = prompts.shape[1]
    for i in range(n_new - 1):
        lg, _ = target_forward(w, cfg, out[-1], cache=cache, pos0=P + i)
        out.append(lg[:, -1:].float().argmax(-1))
    return torch.cat(out, 1)


def init_draft(cfg: Cfg, tw: dict, draft_ids: torch.Tensor, gen: torch.Generator, std=0.02) -> dict:
    """Draft tensors under the names SGLang 0.5.17 llama_eagle3.py loads (midlayer.* is its legacy name for
    model.layers.0.*; q/k/v and gate/up are stacked by its load_weights)."""
    H, I, KV, n_aux = cfg.H, cfg.I, cfg.nkv * cfg.hd, len(AUX_LAYERS)  # noqa: E741

    def r(*s):
        return torch.randn(*s, generator=gen) * std

    p = "midlayer."
    return {
        "fc.weight": r(H, n_aux * H),
        p + "hidden_norm.weight": torch.ones(H), p + "input_layernorm.weight": torch.ones(H),
        p + "self_attn.q_proj.weight": r(cfg.nh * cfg.hd, 2 * H), p + "self_attn.k_proj.weight": r(KV, 2 * H),
        p + "self_attn.v_proj.weight": r(KV, 2 * H), p + "self_attn.o_proj.weight": r(H, cfg.nh * cfg.hd) / 2 ** 0.5,
        p + "post_attention_layernorm.weight": torch.ones(H),
        p + "mlp.gate_proj.weight": r(I, H), p + "mlp.up_proj.weight": r(I, H), p + "mlp.down_proj.weight": r(H, I) / 2 ** 0.5,
        "norm.weight": tw["model.norm.weight"].detach().clone().float(),
        "lm_head.weight": tw["lm_head.weight"].detach()[draft_ids].clone().float(),
    }


def draft_chains(dw, cfg: Cfg, embed, aux, seq, steps, hot=None, teacher=True):
    """All draft chains of a batch at once.

    embed: the TARGET's embed_tokens (SGLang's EAGLE-3 worker shares it into the draft: set_embed).
    aux (B, T, 3H): target aux hidden states at positions 0..T-1; seq (B, T) the committed tokens.
    Chain c (0 <= c < T-1): step 1 = draft extend at position c on (seq[c+1], fc(aux[c])); step s on
    (token_s, hidden of step s-1) at position c+s-1 where token_s = seq[c+s] (teacher) or the draft's own
    step s-1 argmax mapped to a target id by hot (d2t + arange). Returns a list of `steps` logits tensors
    (B, T, Vd) (entry c of step s predicts the token at position c+s+1) and, when not teacher, the list of
    drafted target ids (B, T) per step."""
    B, T = seq.shape
    p = "midlayer."
    rep, sc = cfg.nh // cfg.nkv, cfg.hd ** -0.5
    dt = aux.dtype
    causal = torch.ones(T, T, dtype=torch.bool, device=seq.device).tril()
    K1 = V1 = None
    diagK, diagV = [], []
    logits_out, drafted = [], []
    hid = aux @ dw["fc.weight"].T
    pad = torch.zeros(B, steps + 1, dtype=seq.dtype, device=seq.device)
    seqp = torch.cat([seq, pad], 1)
    tok = seqp[:, 1:T + 1]
    for s in range(1, steps + 1):
        emb = F.embedding(tok, embed).to(dt)
        residual = hid
        x = torch.cat([rms(emb, dw[p + "input_layernorm.weight"], cfg.eps),
                       rms(hid, dw[p + "hidden_norm.weight"], cfg.eps)], -1)
        q, k, v = _attn_proj(x, dw, p, cfg, B, T)
        pos = torch.arange(s - 1, s - 1 + T, device=seq.device)
        cos, sin = rope_cos_sin(pos, cfg.hd, cfg.theta, dt)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if s == 1:
            K1, V1 = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            o = F.scaled_dot_product_attention(q, K1, V1, is_causal=True)
        else:
            diagK.append(k.repeat_interleave(rep, 1))
            diagV.append(v.repeat_interleave(rep, 1))
            main = (q @ K1.transpose(-1, -2)).float() * sc
            main = main.masked_fill(~causal, float("-inf"))
            dia = torch.stack([(q * kk).sum(-1) for kk in diagK], -1).float() * sc  # (B, h, T, s-1)
            pr = torch.cat([main, dia], -1).softmax(-1).to(dt)
            o = pr[..., :T] @ V1
            for j, vv in enumerate(diagV):
                o = o + pr[..., T + j:T + j + 1] * vv
        o = o.transpose(1, 2).reshape(B, T, cfg.nh * cfg.hd) @ dw[p + "self_attn.o_proj.weight"].T
        residual = o + residual
        h = _mlp(rms(residual, dw[p + "post_attention_layernorm.weight"], cfg.eps), dw, p)
        residual = h + residual  # final norm's fused add: this pre-norm sum is the next step's hidden
        logits = rms(residual, dw["norm.weight"], cfg.eps) @ dw["lm_head.weight"].T
        logits_out.append(logits)
        hid = residual
        if s < steps:
            if teacher:
                tok = seqp[:, s + 1:T + s + 1]
            else:
                tok = hot[logits.argmax(-1)]
        if not teacher:
            drafted.append(hot[logits.argmax(-1)])
    return logits_out, drafted


# ----------------------------------------------------------------------------------------------- io
def to_bf16(w: dict) -> dict:
    return {k: (v.detach().to(torch.bfloat16).contiguous() if v.is_floating_point() else v.detach().contiguous())
            for k, v in w.items()}


def load_pair(pair: str, device="cpu", dtype=torch.float32):
    from safetensors.torch import load_file
    tc = json.load(open(f"{pair}/target/config.json"))
    dc = json.load(open(f"{pair}/draft/config.json"))
    tw = {k: v.to(device=device, dtype=dtype) for k, v in load_file(f"{pair}/target/model.safetensors").items()}
    raw = load_file(f"{pair}/draft/model.safetensors")
    dw = {k: v.to(device=device, dtype=dtype) for k, v in raw.items() if v.is_floating_point()}
    if "d2t" in raw:
        d2t = raw["d2t"].to(device)
        hot = d2t + torch.arange(d2t.shape[0], device=device)  # llama_eagle3.py:341
    else:  # draft_vocab_size null: lm_head (and embed) are the target's (eagle_worker_v2.py:289-292)
        assert dc.get("draft_vocab_size") is None and "lm_head.weight" not in dw
        dw["lm_head.weight"] = tw["lm_head.weight"]
        hot = torch.arange(tc["vocab_size"], device=device)
    return tc, dc, tw, dw, hot
