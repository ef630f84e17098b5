#!/usr/bin/env bash
# Build bench_g2.c -> $BUILD/bench_g2 against blst as vendored by the sppark-bench anchor (vendor/blst, unmodified):
# libblst.a is built here, in $BUILD/blst, exactly as that anchor's build.sh builds it (blst's build.sh with
# -D__BLST_PORTABLE__: ADX code chosen at run time from CPUID; blst's CFLAGS minus -Werror), so the anchor's folder
# is only read. No GPU and no nvcc needed.
#   [SPPARK_BENCH=<anchor dir>] [BUILD=<out dir>] [CC=cc] [FORCE=1] bash anchors/blst-g2/build.sh
# Defaults: SPPARK_BENCH=<repo>/.anchors/sppark-bench (a copy of shared/anchors/sppark-bench), BUILD=<this dir>/build.
# Offline and idempotent: an up-to-date library and binary (same sources and flags) are kept.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
A="$(cd "${SPPARK_BENCH:-$HERE/../../.anchors/sppark-bench}" 2>/dev/null && pwd)" \
  || { echo "build.sh: no sppark-bench anchor at ${SPPARK_BENCH:-$HERE/../../.anchors/sppark-bench} (copy shared/anchors/sppark-bench there)" >&2; exit 1; }
BUILD="${BUILD:-$HERE/build}"
CC=${CC:-$(command -v cc || command -v gcc)}
[ -f "$A/vendor/blst/build.sh" ] && [ -f "$A/vendor/blst/bindings/blst.h" ] || { echo "build.sh: $A/vendor/blst is incomplete" >&2; exit 1; }
mkdir -p "$BUILD/blst"
LIB="$BUILD/blst/libblst.a"
now() { date +%s.%N; }
dt()  { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
rev="blst@$(awk '$1 == "blst" { print $2 }' "$A/VENDOR_COMMITS")"
libstamp="$rev $("$CC" --version | head -1) portable"
if [ "${FORCE:-0}" = 1 ] || [ ! -f "$LIB" ] || [ "$(cat "$LIB.flags" 2>/dev/null)" != "$libstamp" ]; then
  t0=$(now)
  ( cd "$BUILD/blst" && CC="$CC" CFLAGS="-O2 -fno-builtin -fPIC -Wall -Wextra" sh "$A/vendor/blst/build.sh" -D__BLST_PORTABLE__ ) \
    >"$BUILD/blst/build.log" 2>&1 || { cat "$BUILD/blst/build.log" >&2; echo "build.sh: blst build failed" >&2; exit 1; }
  echo "$libstamp" >"$LIB.flags"
  echo "build.sh: libblst.a ($rev) built in $(dt "$t0") s"
fi
BIN="$BUILD/bench_g2"
flags=(-O2 -std=c11 -Wall -Wextra -pthread -I"$A/vendor/blst/bindings")
stamp="$("$CC" --version | head -1) ${flags[*]} $(cksum <"$HERE/bench_g2.c") $(cksum <"$LIB")"
if [ "${FORCE:-0}" != 1 ] && [ -x "$BIN" ] && [ "$(cat "$BIN.flags" 2>/dev/null)" = "$stamp" ]; then
  echo "build.sh: $BIN up to date"; exit 0
fi
"$CC" "${flags[@]}" "$HERE/bench_g2.c" "$LIB" -o "$BIN.tmp"
mv -f "$BIN.tmp" "$BIN"
echo "$stamp" >"$BIN.flags"
echo "build.sh: $BIN built ($rev)"
