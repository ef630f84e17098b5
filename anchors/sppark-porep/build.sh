#!/usr/bin/env bash
# Build bench_porep.cu -> $BUILD/sppark_porep against the sppark-bench anchor's vendor/ (sppark, blst headers) and
# its blst library (build/blst/libblst.a, made by the anchor's build.sh, which this runs when the library is absent).
# The nvcc flags are the anchor's (README.md there), so sppark's MSM is compiled exactly as in its rows.
#   [SPPARK_BENCH=<anchor dir>] [BUILD=<out dir>] [NVCC=...] [SM=90] [FORCE=1] anchors/sppark-porep/build.sh
# Defaults: SPPARK_BENCH=<repo>/.anchors/sppark-bench (a copy of shared/anchors/sppark-bench), BUILD=<this dir>/build.
# Offline and idempotent: an up-to-date binary (same source, library and flags) is kept.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
A="$(cd "${SPPARK_BENCH:-$HERE/../../.anchors/sppark-bench}" 2>/dev/null && pwd)" \
  || { echo "build.sh: no sppark-bench anchor at ${SPPARK_BENCH:-$HERE/../../.anchors/sppark-bench} (copy shared/anchors/sppark-bench there)" >&2; exit 1; }
BUILD="${BUILD:-$HERE/build}"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SM=${SM:-90}
LIB="$A/build/blst/libblst.a"
BIN="$BUILD/sppark_porep"
[ -d "$A/vendor/sppark/msm" ] && [ -d "$A/vendor/blst/bindings" ] || { echo "build.sh: $A/vendor is incomplete" >&2; exit 1; }
[ -x "$NVCC" ] || { echo "build.sh: nvcc not found ($NVCC)" >&2; exit 1; }
if [ ! -f "$LIB" ]; then
  [ -w "$A" ] || { echo "build.sh: $LIB missing and $A read-only: run the anchor's build.sh in a writable copy" >&2; exit 1; }
  bash "$A/build.sh" >&2
fi
rev="sppark@$(awk '$1 == "sppark" { print $2 }' "$A/VENDOR_COMMITS")"
flags=(-O3 -std=c++17 -gencode "arch=compute_${SM},code=[sm_${SM},compute_${SM}]" -DFEATURE_BLS12_381 -D__BLST_PORTABLE__
       -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE "-DSPPARK_REV=\"$rev\"" -Xcompiler -Wno-unused-function,-pthread
       -I"$A/vendor/sppark" -I"$A/vendor/blst/src" -I"$A/vendor/blst/bindings")
stamp="$("$NVCC" --version | tail -1) ${flags[*]} $(cksum <"$HERE/bench_porep.cu") $(cksum <"$LIB")"
mkdir -p "$BUILD"
if [ "${FORCE:-0}" != 1 ] && [ -x "$BIN" ] && [ "$(cat "$BIN.flags" 2>/dev/null)" = "$stamp" ]; then
  echo "build.sh: $BIN up to date"; exit 0
fi
t0=$(date +%s.%N)
echo "build.sh: $NVCC ${flags[*]} bench_porep.cu $LIB -o $BIN"
"$NVCC" "${flags[@]}" "$HERE/bench_porep.cu" "$LIB" -o "$BIN.tmp"
mv -f "$BIN.tmp" "$BIN"
echo "$stamp" >"$BIN.flags"
echo "build.sh: $BIN compiled in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, $(stat -c %s "$BIN") bytes"
