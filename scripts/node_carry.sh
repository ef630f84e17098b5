#!/usr/bin/env bash
# Pack node and the node_modules of zkgpu's real-proof flow (circom2, snarkjs, circomlib) into .node/
# (git-ignored) for a GPU host without node or network: the lead carries .node with the checkout
# (the run tool's carry=[".node"]); scripts/gpu_run.sh unpacks it into /tmp/zkgpu-node there.
#   .node/node.tar.xz          the node binary (NODE_BIN, default: node on PATH), plus libstdc++ and
#                              libgcc_s as a fallback for a host whose own are too old
#   .node/node_modules.tar.xz  node_modules as installed by `make node` (npm ci)
# About 30 MB in all (node alone is ~99 MB unpacked, wasmcurves' 35 MB of tests are left out); the carry
# limit is 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
node_bin=$(readlink -f "${NODE_BIN:-$(command -v node)}")
[ -x "$node_bin" ] || { echo "node not found (set NODE_BIN)"; exit 1; }
[ -f node_modules/snarkjs/build/cli.cjs ] || { echo "node_modules missing: run make node"; exit 1; }
rm -rf .node.tmp && mkdir -p .node.tmp/pack/bin .node.tmp/pack/lib
cp "$node_bin" .node.tmp/pack/bin/node
for lib in libstdc++.so.6 libgcc_s.so.1; do
  p=$(ldd "$node_bin" | awk -v l="$lib" '$1 == l {print $3}')
  [ -n "$p" ] && cp -L "$p" .node.tmp/pack/lib/
done
tar -C .node.tmp/pack -cf - bin lib | xz -T0 -6 > .node.tmp/node.tar.xz
tar --exclude=node_modules/wasmcurves/test --exclude=node_modules/circomlib/test -cf - node_modules | xz -T0 -6 > .node.tmp/node_modules.tar.xz
rm -rf .node.tmp/pack .node && mv .node.tmp .node
du -b .node/* | awk '{s += $1; printf "%6.1f MB  %s\n", $1 / 1e6, $2} END {printf "%6.1f MB  in all\n", s / 1e6}'
