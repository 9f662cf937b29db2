"""Checks of pairlib against independent references (CPU, fp32, a few seconds):
1. target_forward == transformers' LlamaForCausalLM (logits; aux == hidden_states[2], [4], [6], i.e. the
   residual stream after layers 1, 3, 5), on the pair's own config and weights;
2. draft_chains(teacher=False) == a step-by-step replay of SGLang's EAGLE-3 loop with an explicit draft KV
   cache (draft extend over the committed prefix, then draft decode at positions seq_len, seq_len+1, ...
   attending to the cached prefix and its own earlier steps), for every chain of a sequence;
3. the incremental (KV-cache) greedy decode of check_pair == argmax of full forwards.
    python3 tests/verify_impl.py PAIR_DIR
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_pair
import pairlib as pl

torch.set_num_threads(1)
pair = sys.argv[1]
tc, dc, tw, dw, hot = pl.load_pair(pair, "cpu", torch.float32)
cfg = pl.Cfg(tc)
ok = True

# 1. HF reference
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

hf = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in tc.items() if k not in ("architectures", "torch_dtype")})).eval()
missing, unexpected = hf.load_state_dict(tw, strict=False)
assert not unexpected and not [m for m in missing if "rotary" not in m], (missing, unexpected)
g = torch.Generator().manual_seed(1)
ids = torch.randint(3, 381, (2, 50), generator=g)
with torch.no_grad():
    o = hf(ids, output_hidden_states=True)
    lg, aux = pl.target_forward(tw, cfg, ids)
ref_aux = torch.cat([o.hidden_states[i + 1] for i in pl.AUX_LAYERS], -1)
e1, e2 = (lg - o.logits).abs().max().item(), (aux - ref_aux).abs().max().item()
print(f"1. target vs transformers {__import__('transformers').__version__}: max|dlogits| {e1:.2e}, max|daux| {e2:.2e}")
ok &= e1 < 1e-3 and e2 < 1e-3

# 2. sequential replay of SGLang's draft loop
H, p, rep, K = cfg.H, "midlayer.", cfg.nh // cfg.nkv, 3
E = tw["model.embed_tokens.weight"]
def layer(emb, hid, pos, cache):
    """llama_eagle3.LlamaDecoderLayer (input layer) + final norm; appends this token's k, v to cache."""
    residual = hid
    x = torch.cat([pl.rms(emb, dw[p + "input_layernorm.weight"], cfg.eps), pl.rms(hid, dw[p + "hidden_norm.weight"], cfg.eps)], -1)
    q = (x @ dw[p + "self_attn.q_proj.weight"].T).view(cfg.nh, cfg.hd)
    k = (x @ dw[p + "self_attn.k_proj.weight"].T).view(cfg.nkv, cfg.hd)
    v = (x @ dw[p + "self_attn.v_proj.weight"].T).view(cfg.nkv, cfg.hd)
    cos, sin = pl.rope_cos_sin(torch.tensor([pos]), cfg.hd, cfg.theta, x.dtype)
    q, k = pl.apply_rope(q, cos, sin), pl.apply_rope(k, cos, sin)
    cache.append((k, v))
    Ks = torch.stack([c[0] for c in cache], 1).repeat_interleave(rep, 0)  # (nh, L, hd)
    Vs = torch.stack([c[1] for c in cache], 1).repeat_interleave(rep, 0)
    a = ((q[:, None, :] * Ks).sum(-1) * cfg.hd ** -0.5).softmax(-1)
    o = (a[..., None] * Vs).sum(1).reshape(-1) @ dw[p + "self_attn.o_proj.weight"].T
    residual = o + residual
    h = pl._mlp(pl.rms(residual, dw[p + "post_attention_layernorm.weight"], cfg.eps), dw, p)
    residual = h + residual
    return pl.rms(residual, dw["norm.weight"], cfg.eps) @ dw["lm_head.weight"].T, residual
seq = ids[0]
T = seq.shape[0]
pair_dw = dw
rand_dw = {k: (v if v.ndim == 1 else torch.randn(v.shape, generator=g) * 0.1) for k, v in pl.init_draft(cfg, tw, hot, g).items()}
for name, dw in (("pair's draft", pair_dw), ("random draft", rand_dw)):
  with torch.no_grad():
    _, aux1 = pl.target_forward(tw, cfg, seq[None])
    _, drafted = pl.draft_chains(dw, cfg, E, aux1, seq[None], K, hot=hot, teacher=False)
    bad, distinct = 0, set()
    for c in range(0, T - 1, 7):
        # draft extend over the committed prefix 0..c: token seq[i+1] with fc(aux[i]) at position i
        cache = []
        for i in range(c + 1):
            lg, hid = layer(E[seq[i + 1]], aux1[0, i] @ dw["fc.weight"].T, i, cache)
        toks = []
        for s in range(1, K + 1):
            d = int(hot[lg.argmax()])
            toks.append(d)
            if s < K:  # draft decode at position seq_len (= c + 1), then + 1 ...
                lg, hid = layer(E[d], hid, c + s, cache)
        par = [int(drafted[s][0, c]) for s in range(K)]
        bad += toks != par
        distinct.add(tuple(toks))
    print(f"2. {name}: parallel chains vs sequential SGLang-loop replay: {bad} of {len(range(0, T - 1, 7))} chains "
          f"differ ({len(distinct)} distinct chains)")
    ok &= bad == 0
dw = pair_dw
with torch.no_grad():
# 3. KV-cache greedy == full-forward greedy
    s3 = check_pair.greedy(tw, cfg, seq[:20].tolist(), 12, "cpu")
    full = seq[:20].tolist()
    for _ in range(12):
        lg, _ = pl.target_forward(tw, cfg, torch.tensor([full]))
        full.append(int(lg[0, -1].argmax()))
    print(f"3. KV-cache greedy == full-forward greedy: {s3 == full}")
    ok &= s3 == full
print("ALL OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
