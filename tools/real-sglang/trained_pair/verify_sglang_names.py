"""Do the saved tensors load into SGLang 0.5.17 as intended? Without sglang (it needs a GPU stack), this replays
LlamaForCausalLMEagle3.load_weights (sglang/srt/models/llama_eagle3.py:314-367, copied logic) against the
parameter names and shapes its constructor creates for the draft config (llama_eagle3.py:44-78, 155-159,
197, 291-303), and compares the target's tensors with make_tiny.py's WEIGHTS=1 target (the tensors SGLang's
LlamaForCausalLM already loaded on the device).
    python3 tests/verify_sglang_names.py PAIR_DIR [MAKE_TINY_WEIGHTS_DIR]
"""
import json
import sys

import torch
from safetensors.torch import load_file

pair = sys.argv[1]
ok = True
dc = json.load(open(f"{pair}/draft/config.json"))
tc = json.load(open(f"{pair}/target/config.json"))
H, I, nh, nkv, hd = dc["hidden_size"], dc["intermediate_size"], dc["num_attention_heads"], dc["num_key_value_heads"], dc["head_dim"]  # noqa: E741
n_aux = len(dc["eagle_config"]["eagle_aux_hidden_state_layer_ids"])
Vd = dc["draft_vocab_size"]
def pad(n):  # ParallelLMHead / VocabParallelEmbedding pad to DEFAULT_VOCAB_PADDING_SIZE 64
    return (n + 63) // 64 * 64


assert not dc["tie_word_embeddings"]
shared_head = Vd is None  # llama_eagle3.py:295-297: lm_head from the target (set_embed_and_head)
params = {  # name -> shape, as LlamaForCausalLMEagle3(config) creates them (TP 1)
    "model.embed_tokens.weight": (pad(dc["vocab_size"]), H),            # replaced by the target's (set_embed)
    "model.fc.weight": (H, H * n_aux),                                   # llama_eagle3.py:155-159
    "model.layers.0.self_attn.qkv_proj.weight": ((nh + 2 * nkv) * hd, 2 * H),  # llama_eagle3.py:56-67 (2x input)
    "model.layers.0.self_attn.o_proj.weight": (H, nh * hd),
    "model.layers.0.mlp.gate_up_proj.weight": (2 * I, H),                # llama_eagle3.py:74-76
    "model.layers.0.mlp.down_proj.weight": (H, I),
    "model.layers.0.input_layernorm.weight": (H,), "model.layers.0.post_attention_layernorm.weight": (H,),
    "model.layers.0.hidden_norm.weight": (H,),                           # llama_eagle3.py:78
    "model.norm.weight": (H,),                                           # llama_eagle3.py:197
    "lm_head.weight": (pad(Vd or dc["vocab_size"]), H),                  # llama_eagle3.py:298-303
}
shard = {"q": (0, nh * hd), "k": (nh * hd, nkv * hd), "v": (nh * hd + nkv * hd, nkv * hd), 0: (0, I), 1: (I, I)}
loaded, hot = {}, None
w = load_file(f"{pair}/draft/model.safetensors")
stacked = [(".qkv_proj", ".q_proj", "q"), (".qkv_proj", ".k_proj", "k"), (".qkv_proj", ".v_proj", "v"),
           (".gate_up_proj", ".gate_proj", 0), (".gate_up_proj", ".up_proj", 1)]
legacy = {"midlayer": "layers.0", "aux_norm_low": "fc_norm.0", "aux_norm_mid": "fc_norm.1", "aux_norm_high": "fc_norm.2"}
for name0, t in w.items():  # the loop of llama_eagle3.py:334-367
    name = name0
    for lg, new in legacy.items():
        if lg in name:
            name = name.replace(lg, new)
    if "d2t" in name:
        hot = t + torch.arange(t.shape[0])  # :341
        print(f"  {name0:42s} {str(tuple(t.shape)):14s} {str(t.dtype):15s} -> hot_token_id (d2t + arange)")
        continue
    if "t2d" in name:
        print(f"  {name0:42s} {str(tuple(t.shape)):14s} {str(t.dtype):15s} -> skipped (:344)")
        continue
    for pn, wn, sid in stacked:
        if wn not in name:
            continue
        name = name.replace(wn, pn)
        pn = f"model.{name}" if name not in params else name
        if pn not in params:
            print("  NOT LOADED (no such param):", name0)
            ok = False
            break
        off, size = shard[sid]
        good = tuple(t.shape) == (size, params[pn][1])
        print(f"  {name0:42s} {str(tuple(t.shape)):14s} {str(t.dtype):15s} -> {pn}[{off}:{off + size}] {'ok' if good else 'SHAPE MISMATCH'}")
        ok &= good
        loaded.setdefault(pn, []).append(sid)
        break
    else:
        pn = name if name in params else f"model.{name}"
        if pn not in params:
            print("  NOT LOADED (no such param):", name0)
            ok = False
            continue
        good = tuple(t.shape) == params[pn]
        print(f"  {name0:42s} {str(tuple(t.shape)):14s} {str(t.dtype):15s} -> {pn} {'ok' if good else 'SHAPE MISMATCH'}")
        ok &= good
        loaded.setdefault(pn, []).append(None)
    ok &= t.dtype in (torch.bfloat16,) or "d2t" in name0 or "t2d" in name0
from_target = {"model.embed_tokens.weight"} | ({"lm_head.weight"} if shared_head else set())
missing = [p for p in params if p not in loaded and p not in from_target]
qkv, gu = sorted(map(str, loaded.get("model.layers.0.self_attn.qkv_proj.weight", []))), sorted(map(str, loaded.get("model.layers.0.mlp.gate_up_proj.weight", [])))
print("params never loaded:", missing or "none (model.embed_tokens.weight comes from the target: eagle_worker_v2.py:295)")
print("qkv shards:", qkv, "gate_up shards:", gu)
ok &= not missing and qkv == ["k", "q", "v"] and gu == ["0", "1"]
if shared_head:
    ok &= hot is None and "t2d" not in w and "lm_head.weight" not in w
    print("draft_vocab_size null: no lm_head/d2t/t2d saved, lm_head and embed come from the target:", ok)
else:
    ok &= hot is not None and hot.shape[0] == Vd and int(hot.min()) >= 0 and int(hot.max()) < tc["vocab_size"] and len(set(hot.tolist())) == Vd
    t2d = w.get("t2d")
    ok &= t2d is not None and t2d.dtype == torch.bool and t2d.shape[0] == tc["vocab_size"] and bool((t2d.nonzero().flatten() == hot.sort().values).all())
    print("d2t/t2d: hot ids unique, in range, t2d marks exactly them:", ok)
ok &= dc["vocab_size"] == tc["vocab_size"] and dc["hidden_size"] == tc["hidden_size"] and "target_hidden_size" not in dc
ok &= max(dc["eagle_config"]["eagle_aux_hidden_state_layer_ids"]) + 1 < tc["num_hidden_layers"]
if len(sys.argv) > 2:
    ref = load_file(f"{sys.argv[2]}/target/model.safetensors")
    tw = load_file(f"{pair}/target/model.safetensors")
    same = set(ref) == set(tw) and all(ref[k].shape == tw[k].shape and ref[k].dtype == tw[k].dtype for k in ref)
    print(f"target: {len(tw)} tensors, names/shapes/dtypes identical to make_tiny.py's WEIGHTS=1 target: {same}")
    rc = json.load(open(f"{sys.argv[2]}/target/config.json"))
    print("target config identical to make_tiny.py's:", rc == tc)
    rd = json.load(open(f"{sys.argv[2]}/draft/config.json"))
    diff = {k: (rd.get(k), dc.get(k)) for k in set(rd) | set(dc) if rd.get(k) != dc.get(k)}
    print("draft config differs from make_tiny.py's only in:", diff)
    ok &= same and rc == tc and set(diff) <= {"draft_vocab_size"}
print("ALL OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
