#!/bin/bash
# Device side: eagletui's live paths end to end against a real sglang 0.5.17 + EAGLE-3 server on the lent
# GPU machine (tiny random-weight Llama, built here). One command per part; each part fits one device call.
#
#   bash tools/real-sglang/device.sh 1   # preflight (fresh machine), bench --launch, preflight right after
#                                        # the stop, bench --vs-no-spec --concurrency 1,4,16, a failed launch's
#                                        # JSON, a two-variant sweep
#   bash tools/real-sglang/device.sh vsnospec  # part 1's --vs-no-spec at c = 1, 4, 16 alone
#   bash tools/real-sglang/device.sh quick  # preflight, bench --launch and its stop, preflight after it
#   bash tools/real-sglang/device.sh final  # a re-check in one call: preflight, bench --launch, preflight
#                                        # after the stop, a steps 3 / no spec / steps 2 sweep (predicted
#                                        # vs measured), the TUI and --vs-no-spec when time is left, then
#                                        # --baseline of its no-spec run from a launch with one more env
#                                        # variable (issue 32: shown, never judged)
#   bash tools/real-sglang/device.sh predict  # only the steps 3 / no spec / steps 2 sweep, longer benchmarks,
#                                        # 3 repeats, a step profile of each spec launch
#   bash tools/real-sglang/device.sh noise  # steps 3 and steps 2 launched twice each: the spread between
#                                        # launches of one setting against the predicted step change
#   bash tools/real-sglang/device.sh stall  # bench --launch under SIGTERM; a headless bench of a server
#                                        # eagletui launched; SIGSTOP of the scheduler for 90 s (issue 31)
#   bash tools/real-sglang/device.sh 2   # the TUI in tmux (connect, b, a toggle, a, r), trace --capture
#                                        # twice on the running server (server default and old eagletui
#                                        # profiler arguments), s, q; reattach by profile
#   bash tools/real-sglang/device.sh grid  # steps 1-5 and speculation off launched twice each, six servers
#                                        # side by side a round, c=1 and 4, steps 3's step profile (issue 32;
#                                        # tools/real-sglang/grid.py)
#   bash tools/real-sglang/device.sh adaptive  # --speculative-adaptive launched and benchmarked at c=1,16 (tier
#                                        # swaps, extra tiers' capture); topk 4 (the silent fall-back: preflight
#                                        # warning, the server's line, the diagnosis); the startup table
#   bash tools/real-sglang/device.sh tune  # eagletui tune over steps 1-5 x speculation on/off (issue 37):
#                                        # its launches against the grid's 6, every launch predicted vs measured
#                                        # (first SIGTERMed mid-benchmark: 143, then --resume follows its server)
#   bash tools/real-sglang/device.sh trained  # the trained pair (trained_pair/, ~4 min of training first):
#                                        # accept, reach per position, accept by category vs its offline replay
#   bash tools/real-sglang/device.sh maxrate  # a steps 3 / no spec sweep at c=1,4 decided by goodput under a
#                                        # tight [slo], each launch searched for its highest request rate
#                                        # meeting it ([sweep.max_rate], issue 35; the work pair)
#   SHAPE=7b PAIR=work bash tools/real-sglang/device.sh grid  # the same pair on a Llama-2-7B-shaped target
#                                        # (make_tiny.py; ~12 GB of random weights, built on the GPU in ~45 s
#                                        # with the pair): its verify is bound by weight reads, not the CPU;
#                                        # the grid wants GRID_MEM_FRACTION=0.8 with it (the comment below)
#   PAIR=work|half bash tools/real-sglang/device.sh PART  # with a known-acceptance drafter pair instead of the
#                                        # random one (make_known_drafters.py: work accepts steps + 1, half
#                                        # steps + 1 or 1.0 by the prompt's last character); after each
#                                        # bench step pair_check.py compares eagletui's accept (pooled, per
#                                        # request, from drafts, per position, per category, the histograms)
#                                        # with the pair's construction and the server's decode lines, and
#                                        # part 2's TUI with the server's /metrics (work); with DRYRUN=1 the
#                                        # simulator serves the pair (--sim-drafter)
#
# Without a GPU: DRYRUN=1 runs the same steps on the simulator (.ci/run does, so the script cannot rot).
# Needs .real/ carried (tools/real-sglang/build.sh makes it). After every step it lists what eagletui
# started that is still alive; $OUT gets report.md, report.json and partN.tar.gz (every run's server
# log, every command's stdout/stderr/JSON, the TUI screens).
PART=${1:-1}
# what the caller asked for: a dry run gives the simulator only a pair asked for by name (CI's dry runs
# of the parts that default to a pair below keep the simulator's configured acceptance)
PAIR_ASKED=$PAIR
# the stall part checks that a headless bench is valid: with the random pair it is not (accept ≈ 1 is
# rightly "the drafter is not working"), so it takes the work pair unless told otherwise
[ "$PART" = stall ] && : "${PAIR:=work}"
# the trained part is about the trained pair
[ "$PART" = trained ] && : "${PAIR:=trained}"
[ "$PART" = maxrate ] && [ -z "$DRYRUN" ] && : "${PAIR:=work}"
R=$(pwd); S=$R/.real; T0=$(date +%s)
# a dry run gets its own dirs and ports: two of them on one machine must not meet
if [ -n "$DRYRUN" ]; then W=${ETR_WORK:-$(mktemp -d /tmp/etr-XXXXXX)}; else W=${ETR_WORK:-/tmp/etr}; fi
mkdir -p $W/out $W/prof
OUTD=$W/out/part$PART; rm -rf $OUTD; mkdir -p $OUTD
el(){ echo $(( $(date +%s) - T0 )); }
# a free port outside the kernel's ephemeral range (bind(0)'s ports are also any client's: a loaded CI
# saw a dry run's launch refused as "port in use"); eagletui's free_port says more
free_port(){ python3 -c "import sys; sys.path.insert(0, '$R'); from eagletui.commands.demo import free_port; print(free_port())"; }
log(){ echo "[$(el)s] $*" | tee -a $OUTD/steps.txt; }
export PYTHONPATH=$R:/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 SGLANG_IS_FLASHINFER_AVAILABLE=false \
  TVM_FFI_CACHE_DIR=/tmp/tvmffi SGLANG_TORCH_PROFILER_DIR=$W/prof PYTHONUNBUFFERED=1 \
  NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
  EAGLETUI_CONFIG_DIR=$W/cfg EAGLETUI_DATA_DIR=$W/data XDG_DATA_HOME=$W/xdg XDG_CONFIG_HOME=$W/xdgc \
  TERM=xterm-256color
[ -z "$CUDA_HOME" ] && command -v nvcc >/dev/null && export CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
if [ -n "$DRYRUN" ]; then
  # here, on the simulator: the same steps, to catch the script's own mistakes before a device call
  export PYTHONPATH=$R TMUX_BIN=$(command -v tmux); : "${OUT:=$W/dryrun-out}"; mkdir -p "$OUT"
  HOME=$W/home; export HOME; mkdir -p $HOME
  # and its own tmux server (tui_drive.py's kill-server must not end another dry run's TUI)
  export ETR_TMUX_SOCKET=etr-$(basename $W)
elif [ ! -f /tmp/site/.done ]; then
  log "setup: unpack sglang 0.5.17 overlay, eagletui's wheels"
  mkdir -p /tmp/site && tar -C /tmp/site -xJf $S/sglang_overlay.tar.xz
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $S/whl/*.whl 2>&1 | tail -2
  # flashinfer's JIT sources are not carried: RMSNorm takes SGLang's native path
  python3 - <<'PY' >>$OUTD/steps.txt 2>&1
p = "/tmp/site/sglang/srt/layers/layernorm.py"; s = open(p).read()
sig = "    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:\n"
i = s.index("    def forward_cuda(\n"); j = s.index(sig, i) + len(sig)
s = s[:j] + "        return self.forward_native(x, residual, post_residual_addition)\n" + s[j:]
open(p, "w").write(s); print("patched layernorm")
PY
  touch /tmp/site/.done
fi
if [ -z "$DRYRUN" ]; then
  # SHAPE=7b (make_tiny.py): a Llama-2-7B-shaped target with the same tokenizer and construction, its own dirs
  # (/tmp/sgw/7b/...): a verify then costs milliseconds of weight reads, as a deployed model's does
  SHAPE=${SHAPE:-tiny}; if [ "$SHAPE" = tiny ]; then SG=/tmp/sgw; else SG=/tmp/sgw/$SHAPE; fi
  [ -f $SG/tiny/draft/model.safetensors ] || { log "setup: $SHAPE model"; mkdir -p $SG; \
    SHAPE=$SHAPE WEIGHTS=1 python3 $R/tools/real-sglang/make_tiny.py $SG/tiny >>$OUTD/steps.txt 2>&1; }
  export TMUX_BIN=$S/tmux/tmux LD_LIBRARY_PATH=$S/tmux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    TERMINFO_DIRS=$S/tmux/terminfo:/usr/share/terminfo:/lib/terminfo
  chmod +x $TMUX_BIN 2>/dev/null
  P=$W/tiny.toml; cp $R/tools/real-sglang/tiny-eagle3.toml $P
  # a larger target's six grid servers share the GPU only with a small KV pool each: SGLang 0.5.17 refuses a
  # launch whose own weights exceed mem-fraction-static x the memory free before it loads (a 12 GB target at
  # 0.12 beside five others loading: "Loaded weights leave no GPU memory for the KV cache"), so the grid
  # raises the fraction (GRID_MEM_FRACTION) and caps the pool here (16,384 tokens: c = 4 needs ~1,500)
  [ "$SG" != /tmp/sgw ] && sed -i "s#/tmp/sgw/tiny/#$SG/tiny/#; s/^max-total-tokens = .*/max-total-tokens = 16384/" $P
  # PAIR=work|half: the known-acceptance pairs (make_known_drafters.py, from shared/known-drafters: accept =
  # steps + 1 exactly; "half": steps + 1 for prompts ending in ".", 1.0 for "?"), built from the tiny model
  # in seconds; unset: the random pair (accept ≈ 1, a useless drafter is a real case too)
  # PAIR=trained: a tiny target trained on the interpreter's standard library and an EAGLE-3 head trained on
  # its hidden states (trained_pair/: TRAIN_S seconds of training, then the offline replay's expected.json),
  # so acceptance falls with the draft position and differs by prompt category as a real drafter's does
  if [ "$PAIR" = trained ]; then
    [ -f /tmp/sgw/trained/draft/model.safetensors ] || { log "setup: train the pair (${TRAIN_S:-240} s budget)"; \
      python3 $R/tools/real-sglang/trained_pair/train_pair.py --tiny /tmp/sgw/tiny --out /tmp/sgw/trained \
      --time-budget-s ${TRAIN_S:-240} > $OUTD/train.log 2>&1; log "setup: train_pair rc=$?"; }
    cp /tmp/sgw/trained/expected.json /tmp/sgw/trained/train_meta.json $OUTD/ 2>/dev/null
  elif [ -n "$PAIR" ]; then
    [ -f $SG/$PAIR/draft/model.safetensors ] && [ -f $SG/pairs-check.json ] || { log "setup: known drafters"; \
      python3 $R/tools/real-sglang/make_known_drafters.py $SG/tiny $SG $R/eagletui/bench/data/chat.jsonl \
      $SG/pairs-check.json $SG/qa.jsonl >>$OUTD/steps.txt 2>&1; }
    # what pair_check.py compares with: which prompts the half draft predicts (a machine kept warm from an
    # earlier part has the pairs already: their report is kept beside them)
    cp $SG/pairs-check.json $OUTD/pairs-check.json 2>/dev/null; QA=$SG/qa.jsonl
  fi
  if [ -n "$PAIR" ]; then
    sed -i "s#$SG/tiny/target#$SG/$PAIR/target#; s#$SG/tiny/draft#$SG/$PAIR/draft#; s/^name = .*/name = \"tiny-$PAIR\"/" $P
    [ "$PAIR" = half ] && sed -i "s#^prompts = \"chat\"#prompts = \"$SG/qa.jsonl\"#; s/^num_prompts = 12\$/num_prompts = 32/" $P
    # every held-out prompt once (16 code, 16 prose), greedy, 128 new tokens: what expected.json replayed
    [ "$PAIR" = trained ] && sed -i 's#^prompts = "chat"#prompts = "/tmp/sgw/trained/prompts.jsonl"#; s/^num_prompts = 12$/num_prompts = 32/; s/^warmup = 1$/warmup = 0/' $P
  fi
else
  P=$W/tiny.toml; sed "s#\"REPO\"#\"$R\"#; s/^port = 30000/port = $(free_port)/" $R/tools/real-sglang/sim-dryrun.toml > $P
  # PAIR=work|half asked for: the simulator's copy of the pair (--sim-drafter: every draft accepted, or by
  # the prompt's last character), the chat prompts with make_known_drafters' categories, and its report's
  # per-prompt flags from the simulator's own rule, so pair_check.py runs as on the GPU
  PAIR=$PAIR_ASKED
  case "$PAIR" in
    work|half)
      sed -i "s/^\[server.args\]\$/[server.args]\nsim-drafter = \"$PAIR\"/" $P; QA=$W/qa.jsonl
      python3 - $R/eagletui/bench/data/chat.jsonl $QA $OUTD/pairs-check.json <<'PY'
import json, sys
from eagletui.sim.drafters import fits
rows = [json.loads(x)["prompt"] for x in open(sys.argv[1]) if x.strip()]
cat = lambda p: "question" if p.rstrip().endswith("?") else "request"
with open(sys.argv[2], "w") as f:
    for p in rows:
        f.write(json.dumps({"prompt": p, "category": cat(p)}) + "\n")
per = {}
for p in rows:
    per.setdefault(cat(p), []).append({"last": p.rstrip()[-1:], "half_right": fits(p), "work_right": True})
json.dump({"simulator": "eagletui.sim.drafters.fits", "prompts": per}, open(sys.argv[3], "w"), indent=1)
PY
      [ "$PAIR" = half ] && sed -i "s#^prompts = \"chat\"#prompts = \"$QA\"#; s/^num_prompts = 12\$/num_prompts = 32/" $P ;;
    "") ;;
    *) log "PAIR=$PAIR: the simulator has no such pair; the dry run keeps its configured acceptance"; PAIR= ;;
  esac
fi
PS=$W/sweep.toml; { cat $P; printf '\n[sweep]\nrepeats = 1\n[[sweep.variants]]\nname = "steps 3"\nset = { "speculative-num-steps" = 3 }\n[[sweep.variants]]\nname = "steps 2"\nset = { "speculative-num-steps" = 2 }\n'; } > $PS
# part final's sweep: steps 3, its no-spec counterpart, then steps 2, which the cycle model predicts from
# the first two before it launches (issue 25: the report's predicted vs measured for the step change).
# "steps 3" sets nothing (the profile's 3): the sweep orders launches by distance from the first variant,
# so no spec (one flag away) launches before steps 2 and the cycle model has its no-spec step
PP=$W/predict.toml; { cat $P; printf '\n[sweep]\nrepeats = 1\n[[sweep.variants]]\nname = "steps 3"\n[[sweep.variants]]\nname = "no spec"\nset = { "speculative-algorithm" = "" }\n[[sweep.variants]]\nname = "steps 2"\nset = { "speculative-num-steps" = 2 }\n'; } > $PP
PB=$W/baddraft.toml; sed 's#^speculative-draft-model-path = .*#speculative-draft-model-path = "/tmp/sgw/tiny/no-such-draft"#; s/^ready_timeout_s = 240/ready_timeout_s = 120/' $P > $PB
# the simulator takes any draft path: there the failed launch is an injected OOM while loading
[ -n "$DRYRUN" ] && sed -i 's/^\[server.env\]/[server.env]\nEAGLETUI_SIM_FAIL = "oom-load"/' $PB
# the tiny target without its draft path: SGLang would load the target as the draft and crash after the
# weights (sgl-project/sglang#36528); the preflight must refuse it. The dry run points it at a local
# config.json of the same Llama (make_tiny.configs()) so the simulator's profile is refused alike
PN=$W/nodraft.toml; sed '/^speculative-draft-model-path = /d' $P > $PN
if [ -n "$DRYRUN" ]; then mkdir -p $W/llama && python3 -c "import json,sys; sys.path.insert(0, '$R/tools/real-sglang'); \
  import make_tiny; json.dump(make_tiny.configs()[0], open('$W/llama/config.json', 'w'))" && \
  sed -i "s#^model-path = .*#model-path = \"$W/llama\"#" $PN; fi
PO=$W/other.toml; sed "s/^name = .*/name = \"other-port\"/; s/^port = .*/port = $(free_port)/" $P > $PO
# tui_drive.py checks /metrics against the TUI's accept with the work pair
export PAIR
E(){ python3 -m eagletui "$@"; }
# step NAME TIMEOUT CMD... : run, keep stdout/stderr, record rc and seconds, then list leftovers
step(){ local n=$1 t=$2; shift 2; local s=$(date +%s.%N)
  log "$n: $*"
  timeout $t "$@" > $OUTD/$n.out 2> $OUTD/$n.err; local rc=$?
  local d=$(python3 -c "import time;print(round(time.time()-$s,1))")
  echo "{\"step\":\"$n\",\"rc\":$rc,\"seconds\":$d,\"at\":$(el)}" >> $OUTD/steps.jsonl
  log "$n: rc=$rc in ${d}s"
  python3 $R/tools/real-sglang/leftovers.py "$n" ${DRYRUN:+--runs-only} >> $OUTD/leftovers.jsonl 2>&1
  tail -1 $OUTD/leftovers.jsonl | cut -c1-300 | tee -a $OUTD/steps.txt
}
# pairck STEP [LAUNCHES [PROFILE]]: with a known pair (PAIR=work|half), that bench step's JSON against the
# pair's construction and the server's own decode lines (pair_check.py, lines into pair-check.jsonl,
# report.py makes them checks); LAUNCHES: how many of the newest run dirs the step made (--vs-no-spec: 2,
# its spec half's log is the one with accept lines; a sweep: 0, each variant's accept is checked)
pairck(){ local n=$1 k=${2:-1} logs
  case "$PAIR" in work|half) ;; *) return 0 ;; esac
  [ -s $OUTD/$n.out ] || { log "$n: pair_check skipped (no JSON)"; return 0; }
  logs=$([ "$k" -gt 0 ] && ls -td ~/.eagletui/runs/*/ 2>/dev/null | head -$k | sed 's#$#server.log#')
  python3 $R/tools/real-sglang/pair_check.py $PAIR $OUTD/$n.out ${3:-$P} --label $n --pairs $OUTD/pairs-check.json \
    --qa "$QA" --log $logs >> $OUTD/pair-check.jsonl 2>&1
  log "$n: pair_check rc=$? ($(grep -c '"ok": true' $OUTD/pair-check.jsonl) pass, $(grep -c '"ok": false' $OUTD/pair-check.jsonl) fail so far)"
}
# on the GPU, a packer copies what the part has so far to $OUT every 30 s: a call cut by its time limit
# still brings back the steps it finished (part 2's first GPU try came back empty)
if [ -z "$DRYRUN" ]; then
  ( while sleep 30; do tar -C $W/out -czf $OUT/.partial.tgz part$PART 2>/dev/null && mv $OUT/.partial.tgz $OUT/partial.tgz; done ) &
  PARTIAL_PACKER=$!
fi
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > $OUTD/nvidia-smi.txt 2>&1
python3 -c "import importlib.metadata as m; print('sglang', m.version('sglang'), 'torch', m.version('torch'), 'textual', m.version('textual'))" > $OUTD/versions.txt 2>&1
git -C $R log -1 --format='%H %s' > $OUTD/commit.txt 2>/dev/null || echo "no git" > $OUTD/commit.txt

if [ "$PART" = 1 ]; then
  step a-preflight-fresh 150 python3 -m eagletui preflight local --profile $P --json
  step a2-preflight-nodraft 150 python3 -m eagletui preflight local --profile $PN --json
  step b-bench-launch 330 python3 -m eagletui bench local --profile $P --launch --json
  pairck b-bench-launch
  step c-preflight-after-stop 150 python3 -m eagletui preflight local --profile $P --json
  # issue 32: c=16 too (the eager point when the launch captures fewer sizes: named, never the headline),
  # and at most 60 s of extra no-spec runs where a point is within its noise (the JSON's "decide")
  step d-vs-no-spec 420 python3 -m eagletui bench local --profile $P --vs-no-spec --concurrency 1,4,16 --decide-within 60 --json
  pairck d-vs-no-spec 2
  [ $(el) -lt 400 ] && step g-bad-draft 150 python3 -m eagletui bench local --profile $PB --launch --json
  [ $(el) -lt 430 ] && step f-sweep 300 python3 -m eagletui sweep local --profile $PS --json --no-record && pairck f-sweep 0 $PS
elif [ "$PART" = quick ]; then
  # the control path alone, for a device call with little time left: the fresh preflight, bench --launch
  # (launch, benchmark, stop by SIGTERM to the leader) and the preflight right after the stop
  step a-preflight-fresh 150 python3 -m eagletui preflight local --profile $P --json
  step b-bench-launch 330 python3 -m eagletui bench local --profile $P --launch --json
  pairck b-bench-launch
  step c-preflight-after-stop 150 python3 -m eagletui preflight local --profile $P --json
elif [ "$PART" = vsnospec ]; then
  # part 1's --vs-no-spec alone (issue 32's done-when: pays only where the steady-state decode agrees, the
  # eager point at c = 16 named), for a device call with little time left
  step d-vs-no-spec ${VS_S:-400} python3 -m eagletui bench local --profile $P --vs-no-spec --concurrency 1,4,16 --decide-within ${VS_DECIDE:-40} --json
  pairck d-vs-no-spec 2
elif [ "$PART" = final ]; then
  # one call for a re-check after a change: the fresh preflight, bench --launch and its stop, the
  # preflight right after it, the steps 3 -> no spec -> steps 2 sweep (predicted vs measured for the step
  # change), then the TUI with both captures and --vs-no-spec only if the device call has time left for
  # them (the TUI takes ~260 s on the device: part 2 runs it on its own)
  step a-preflight-fresh 150 python3 -m eagletui preflight local --profile $P --json
  step b-bench-launch 330 python3 -m eagletui bench local --profile $P --launch --json
  pairck b-bench-launch
  step c-preflight-after-stop 150 python3 -m eagletui preflight local --profile $P --json
  step f-sweep 300 python3 -m eagletui sweep local --profile $PP --json --no-record
  pairck f-sweep 0 $PP
  # a dry run leaves the TUI to part 2's dry run (CI runs both side by side: the same tui_drive.py twice
  # was the side phase's longest pole, 88 of final's 233 s)
  if [ -n "$DRYRUN" ]; then log "t0-tui: skipped in a dry run (part 2's dry run drives the TUI)"
  elif [ $(el) -lt 260 ]; then step t0-tui 330 python3 $R/tools/real-sglang/tui_drive.py $P $OUTD
  else log "t0-tui: skipped at $(el)s (no time left in this call; part 2 runs the TUI)"; fi
  [ $(el) -lt 380 ] && step d-vs-no-spec 190 python3 -m eagletui bench local --profile $P --vs-no-spec --concurrency 1,4 --decide-within 30 --json && pairck d-vs-no-spec 2
  # issue 32: --vs-no-spec's no-spec run as the --baseline of a spec launch that differs from it in one
  # environment variable (SGLang ignores it): the pair is shown with that difference and never judged
  BASE=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["session"]; print(s["name"] + ":" + str(s["run"]))' $OUTD/d-vs-no-spec.out 2>/dev/null)
  PU=$W/unlike.toml; sed 's/^\[server.env\]/[server.env]\nEAGLETUI_LIKE_FOR_LIKE_PROBE = "1"/' $P > $PU
  if [ -n "$BASE" ] && [ $(el) -lt 420 ]; then step e-baseline-unlike 170 python3 -m eagletui bench local --profile $PU --launch --baseline $BASE --json; pairck e-baseline-unlike 1 $PU
  else log "e-baseline-unlike: skipped at $(el)s (no --vs-no-spec session, or no time left in this call)"; fi
elif [ "$PART" = predict ]; then
  # the prediction check alone (issue 25): steps 3 with a step profile after its benchmarks, then no spec
  # and steps 2, each benchmark 32 prompts × 256 tokens (one 12 × 128 run of 2.3 s could not tell steps 3
  # from steps 2 on the tiny model) and 3 repeats; steps 2 and speculation off are predicted from the
  # steps 3 launch's profile and measurements, before they launch; steps 3 again at the end (the drift
  # check) measures how far two launches of one setting differ on this machine
  PL=$W/predict-long.toml
  N=32; T=256; RP=3; [ -n "$DRYRUN" ] && { N=8; T=64; RP=1; }
  { sed "s/^num_prompts = 12$/num_prompts = $N/; s/^max_new_tokens = 128$/max_new_tokens = $T/" $P
    printf '\n[sweep]\nrepeats = %s\nstep_profile = true\ndrift_check = true\n[[sweep.variants]]\nname = "steps 3"\n[[sweep.variants]]\nname = "no spec"\nset = { "speculative-algorithm" = "" }\n[[sweep.variants]]\nname = "steps 2"\nset = { "speculative-num-steps" = 2 }\n' $RP; } > $PL
  # four launches of ~60-130 s, three step profiles and the benchmarks: give the device call 560 s
  step f-sweep 520 python3 -m eagletui sweep local --profile $PL --json --no-record
  pairck f-sweep 0 $PL
elif [ "$PART" = noise ]; then
  # launch-to-launch spread (issue 25): steps 3 and steps 2 twice each, a step profile of each, the same
  # benchmarks as part predict; each steps 2 launch is predicted from the latest steps 3 launch before it
  PL=$W/noise.toml
  # NOISE_SHORT=1: without "steps 3 again" (three launches: fits a device call of ~450 s)
  AGAIN3='[[sweep.variants]]\nname = "steps 3 again"\nset = { "speculative-num-steps" = 3 }\n'; [ -n "$NOISE_SHORT" ] && AGAIN3=
  N=32; T=256; [ -n "$DRYRUN" ] && { N=8; T=64; }
  { sed "s/^num_prompts = 12$/num_prompts = $N/; s/^max_new_tokens = 128$/max_new_tokens = $T/" $P
    printf '\n[sweep]\nrepeats = 1\nstep_profile = true\ndrift_check = false\n[[sweep.variants]]\nname = "steps 3"\n[[sweep.variants]]\nname = "steps 2"\nset = { "speculative-num-steps" = 2 }\n'"$AGAIN3"'[[sweep.variants]]\nname = "steps 2 again"\nset = { "speculative-num-steps" = 2 }\n'; } > $PL
  step f-sweep 520 python3 -m eagletui sweep local --profile $PL --json --no-record
  pairck f-sweep 0 $PL
elif [ "$PART" = grid ]; then
  # issue 32's check: steps 1-5 and speculation off, each launched twice (six servers side by side per
  # round, benchmarked one after another), steps 3's step profile; grid_eval.py predicts offline
  # a dry run (CI): one round of steps 3, no spec and steps 1 on the simulator
  if [ -n "$DRYRUN" ]; then : "${GRID_ROUNDS:=1}"; export GRID_N=${GRID_N:-3}; else export GRID_PIN=${GRID_PIN:-1} GRID_MEM_FRACTION=${GRID_MEM_FRACTION:-0.1} GRID_PROMPTS=${GRID_PROMPTS:-32} GRID_TOKENS=${GRID_TOKENS:-256} GRID_WARMUP=${GRID_WARMUP:-8}; fi
  # what is measured so far comes back even when the device call runs out: packed every 30 s
  ( while sleep 30; do tar -C $OUTD -czf $OUT/.grid.tgz grid 2>/dev/null && mv $OUT/.grid.tgz $OUT/grid.tgz; done ) &
  PACKER=$!
  export GRID_DEADLINE_S=$(( ${GRID_S:-520} - 15 ))
  step g-grid ${GRID_S:-520} python3 $R/tools/real-sglang/grid.py $P $OUTD/grid ${GRID_ROUNDS:-2}
  kill $PACKER 2>/dev/null; tar -C $OUTD -czf $OUT/grid.tgz grid 2>/dev/null
  # what eagletui predicts from round 1's steps 3 launch (with its step profile, and without), and the
  # leave-one-out check of the fit path: offline, on what the grid measured (issue 32)
  step g-eval 60 python3 $R/tools/real-sglang/grid_eval.py $OUTD/grid
  step g-loo 60 python3 $R/tools/real-sglang/grid_eval.py $OUTD/grid --loo
elif [ "$PART" = tune ]; then
  # issue 37 item 4: eagletui tune over steps 1-5 x speculation on/off (6 configurations: the grid launches
  # all 6; tune as few as the cycle model allows), objective tok/s at c=1 and 4, a step profile of each
  # spec launch; then the same command again: finished, its report again, nothing launched
  PT=$W/tune.toml; N=32; T=256; RP=${TUNE_REPEATS:-2}; [ -n "$DRYRUN" ] && { N=8; T=64; RP=1; }
  { sed "/^arg = \"speculative-num-steps\"/,/^max = /s/^max = 4/max = 5/; s/^num_prompts = 12$/num_prompts = $N/; s/^max_new_tokens = 128$/max_new_tokens = $T/" $P
    printf '\n[tune]\nconcurrency = [1, 4]\nrepeats = %s\n[tune.space]\nspeculative-algorithm = ["EAGLE3", ""]\nspeculative-num-steps = [3, 1, 2, 4, 5]\n' $RP; } > $PT
  # SIGTERM two seconds after the first benchmark's repeat (term_when.py): exits 143 with its report and
  # leaves the server in flight for --resume, which u-tune then follows instead of launching it again
  TT=240; [ -n "$DRYRUN" ] && TT=120
  [ -z "$SKIP_TUNE_TERM" ] && step u-tune-sigterm $((TT + 60)) python3 $R/tools/real-sglang/term_when.py "repeat 1" $TT 2 -- python3 -m eagletui tune local --profile $PT --json --no-record --resume
  # --resume: a call that ran out of time continues where it stopped when the part is run again
  step u-tune 540 python3 -m eagletui tune local --profile $PT --json --no-record --resume
  step u-tune-again 40 python3 -m eagletui tune local --profile $PT --json --no-record
elif [ "$PART" = stall ]; then
  # issue 31: bench --launch ended by SIGTERM mid-benchmark (term_when.py) stops its server, prints its JSON
  # with what was measured and exits 143 (item 4); then stall_check.py: a headless bench of a server
  # eagletui launched is valid (item 1), SIGSTOP of scheduler_TP0 alone for 90 s during a benchmark is said
  # within the stall threshold and the run invalid, and after SIGCONT the same server serves (item 9)
  TT=240; STOP_S=90; [ -n "$DRYRUN" ] && { TT=120; STOP_S=20; }
  # SIGTERM a few seconds after the benchmark's first repeat (TT: the most it waits for it), not after a
  # fixed time: under CI's load the dry run's fixed 25 s came before Python had its signal handlers
  [ -z "$SKIP_I4" ] && step i4-sigterm-bench $((TT + 60)) python3 $R/tools/real-sglang/term_when.py "repeat 1/" $TT 3 -- python3 -m eagletui bench local --profile $P --launch --repeats 200 --json
  # SKIP_I4 / SKIP_I9: one half alone (a dry run of the SIGTERM check in a minute)
  if [ -n "$SKIP_I9" ]; then :
  elif [ -n "$DRYRUN" ]; then step i9-stall 300 env EAGLETUI_TIMINGS=fast python3 $R/tools/real-sglang/stall_check.py $P $STOP_S
  else step i9-stall 420 python3 $R/tools/real-sglang/stall_check.py $P $STOP_S; fi
elif [ "$PART" = trained ]; then
  # issue 31: the trained pair served; eagletui's accept, reach per position and accept by category against
  # the offline replay of the same prompts (trained_check.py), at concurrency 1 as the replay decodes; then
  # steps 2, where the reach of the positions kept must stay what it was (a built pair cannot show that)
  step b-bench-launch 330 python3 -m eagletui bench local --profile $P --launch --concurrency 1 --json
  [ -f $OUTD/expected.json ] && python3 $R/tools/real-sglang/trained_check.py $OUTD/expected.json $OUTD/b-bench-launch.out \
    "$(ls -td ~/.eagletui/runs/*/ 2>/dev/null | head -1)server.log" > $OUTD/trained-check.jsonl 2>&1
  P2=$W/trained-s2.toml; sed 's/^speculative-num-steps = 3$/speculative-num-steps = 2/; s/^speculative-num-draft-tokens = 4$/speculative-num-draft-tokens = 3/' $P > $P2
  [ $(el) -lt 420 ] && step c-bench-steps2 200 python3 -m eagletui bench local --profile $P2 --launch --concurrency 1,4 --json
elif [ "$PART" = maxrate ]; then
  # issue 35 items 3-4: [sweep] objective = "goodput" decides the sweep (and its crossover) by the tok/s of
  # the requests meeting the [slo]; [sweep.max_rate] bisects each launch's request rate (Poisson arrivals,
  # the same launch) for the highest one meeting it. The work pair: the random drafter's spec runs are
  # invalid (accept ≈ 1), and an invalid step cannot be judged (the search would stop at its first step)
  # MAXRATE_N / MAXRATE_STEPS: a smaller search where the device call must hold another part too
  PM=$W/maxrate.toml; N=${MAXRATE_N:-64}; LO=2; HI=2000; [ -n "$DRYRUN" ] && { N=16; LO=20; }
  { sed "s/^ttft_ms = .*/ttft_ms = { p = 90, max = 100 }/" $P
    printf '
[sweep]
repeats = 1
objective = "goodput"
[[sweep.variants]]
name = "steps 3"
[[sweep.variants]]
name = "no spec"
set = { "speculative-algorithm" = "" }
[sweep.client]
concurrency = [1, 4]
[sweep.max_rate]
low = %s
high = %s
steps = %s
num_prompts = %s
' $LO $HI ${MAXRATE_STEPS:-6} $N; } > $PM
  step f-sweep 540 python3 -m eagletui sweep local --profile $PM --json --no-record --crossover $W/adaptive.json
  # the finished sweep's report again, in a new process without a launch: its frontier is folded from the
  # runs kept beside the queue (<queue>.runs.jsonl), so it must equal f-sweep's (as after a --resume)
  step f-sweep-report 60 python3 -m eagletui sweep local --profile $PM --json --no-record
  # the SLO's line on the decode axis (1000 ÷ the itl bound) splits the points by that bound, and the
  # report again has the same frontier
  python3 $R/tools/real-sglang/frontier_check.py $OUTD/f-sweep.out $OUTD/f-sweep-report.out > $OUTD/frontier-check.jsonl 2>&1
  log "frontier_check rc=$? ($(grep -c '"ok": true' $OUTD/frontier-check.jsonl) pass, $(grep -c '"ok": false' $OUTD/frontier-check.jsonl) fail)"
elif [ "$PART" = adaptive ]; then
  # issue 35 item 5: --speculative-adaptive on the real server. c=1 and 16 route the batch to different
  # slots (0.5.17's default config: bs 1-7 [1, 3, 7], 8-31 [0, 1, 3]), so the log has "Switch adaptive
  # runtime state" lines and the benchmark's tiers are in its diagnosis; the launch logs "Built adaptive
  # runtime state" per extra tier. Then topk 4: the preflight warns, the server falls back to static
  # steps with its one WARNING, and the diagnosis says so from the log. Then the startup table.
  # 0.5.17 sizes the logits buffer the graph runners share for the launch's draft tokens, and the default
  # tiers go up to steps 7: at steps 3 the launch dies building that tier (sglang#30549, first seen here
  # 2026-12-02), so the preflight must refuse it; launched at the largest tier (steps 7, 8 draft tokens)
  # it starts and adaptive steps down from there
  PA=$W/adaptive.toml; sed 's/^\[server.args\]$/[server.args]\nspeculative-adaptive = true/' $P > $PA
  PA7=$W/adaptive-steps7.toml; sed 's/^speculative-num-steps = .*/speculative-num-steps = 7/; s/^speculative-num-draft-tokens = .*/speculative-num-draft-tokens = 8/; /^arg = "speculative-num-steps"/,/^max = /s/^max = .*/max = 7/; /^arg = "speculative-num-draft-tokens"/,/^max = /s/^max = .*/max = 8/' $PA > $PA7
  PF=$W/adaptive-topk4.toml; sed 's/^speculative-eagle-topk = .*/speculative-eagle-topk = 4/; s/^speculative-num-draft-tokens = .*/speculative-num-draft-tokens = 8/; /^arg = "speculative-num-draft-tokens"/,/^max = /s/^max = .*/max = 8/' $PA > $PF
  step a-preflight-adaptive 150 python3 -m eagletui preflight local --profile $PA --json
  step a2-preflight-adaptive7 150 python3 -m eagletui preflight local --profile $PA7 --json
  step b-bench-adaptive 330 python3 -m eagletui bench local --profile $PA7 --launch --concurrency 1,16 --json
  step c-preflight-topk4 150 python3 -m eagletui preflight local --profile $PF --json
  step d-bench-topk4 330 python3 -m eagletui bench local --profile $PF --launch --json
  step e-sessions 60 python3 -m eagletui sessions
else
  step t0-tui 420 python3 $R/tools/real-sglang/tui_drive.py $P $OUTD
  [ $(el) -lt 420 ] && step h-reattach-other-profile 180 python3 $R/tools/real-sglang/reattach_check.py $P $PO
fi
E sessions --json > $OUTD/sessions.json 2>&1
python3 $R/tools/real-sglang/leftovers.py end --kill ${DRYRUN:+--runs-only} >> $OUTD/leftovers.jsonl 2>&1
cp -r ~/.eagletui/runs $OUTD/runs 2>/dev/null
PAIR=$PAIR python3 $R/tools/real-sglang/report.py $OUTD $PART > $OUT/report.md 2> $OUTD/report.err; REPORT_RC=$?
cp $OUTD/report.json $OUT/ 2>/dev/null
[ -n "$PARTIAL_PACKER" ] && { kill $PARTIAL_PACKER 2>/dev/null; rm -f $OUT/partial.tgz $OUT/.partial.tgz; }
tar -C $W/out -czf $OUT/part$PART.tar.gz part$PART
log "done"; cp $OUTD/steps.txt $OUT/
# a dry run (CI runs one) fails when any check fails; on the device the report says it all
[ -n "$DRYRUN" ] && { cat $OUT/report.md | grep -E '^- (PASS|FAIL)'; exit $REPORT_RC; }
exit 0
