#!/bin/bash
# CPU side: build the carried folder .real/ that tools/real-sglang/device.sh needs on the lent GPU machine
# (it has CUDA, torch 2.11 and python3.12, but no internet, no sglang, no eagletui deps, no tmux).
#
#   tools/real-sglang/build.sh          # from the repository root; ~500 MB of downloads the first time
#
# .real/ holds: sglang_overlay.tar.xz (sglang 0.5.17 + the pure-Python packages it needs + a trimmed
# sglang-kernel, built by build_overlay.sh: ~42 MB), whl/ (eagletui's dependencies as cp312 wheels),
# tmux/ (this machine's tmux with the libraries ldd names, and terminfo). Keep it under the 64 MiB a
# device call may carry, together with the tracked tree. .real/ is ignored by git (.git/info/exclude).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
R=.real
mkdir -p $R/whl $R/tmux/lib $R/tmux/terminfo
grep -qx '/.real/' .git/info/exclude 2>/dev/null || echo '/.real/' >> .git/info/exclude
PY312=${PY312:-$(command -v python3.12 || ls /root/.pyenv/versions/3.12*/bin/python3 2>/dev/null | head -1)}
if [ ! -f $R/sglang_overlay.tar.xz ]; then
  if [ -f .sgl/sglang_overlay.tar.xz ]; then cp .sgl/sglang_overlay.tar.xz $R/
  else PY=$PY312 DST=$R bash tools/real-sglang/build_overlay.sh; fi
fi
PIP="python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
 --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
 --platform manylinux2014_x86_64 -d $R/whl"
# what eagletui imports that the device image lacks (aiohttp, pygments, orjson are there or in the overlay)
for p in textual==8.2.8 rich==15.0.0 textual-plotext==1.0.1 plotext==5.3.2 asyncssh==2.24.1 \
         cryptography==50.0.2 markdown-it-py==4.3.0 mdurl==0.1.2 mdit-py-plugins==0.7.0 linkify-it-py==2.2.0 \
         uc-micro-py==2.0.0 platformdirs==4.14.9 tomli-w==1.2.0 typing-extensions==4.16.0 \
         textual-serve==1.1.3 aiohttp-jinja2==1.6 jinja2==3.1.6 markupsafe==3.0.4; do
  ls $R/whl | grep -qi "^$(echo ${p%%==*} | tr - _)-${p##*==}-" || $PIP "$p" 2>&1 | grep -v WARNING || true
done
TM=$(command -v tmux)
cp "$TM" $R/tmux/tmux
for lib in $(ldd "$TM" | awk '/=>/ {print $3}' | grep -E 'libutempter|libtinfo|libevent'); do cp -L "$lib" $R/tmux/lib/; done
for t in x tmux screen; do
  for d in /usr/share/terminfo /lib/terminfo; do [ -d $d/$t ] && cp -r $d/$t $R/tmux/terminfo/ 2>/dev/null || true; done
done
cp tools/real-sglang/make_tiny.py $R/
du -sh $R; du -sh $R/*
echo "carry: .real   run: bash tools/real-sglang/device.sh PART (1 or 2)"
