#!/usr/bin/env bash
# Run blst's G2 Pippenger on all of this host's cores (rows blst_g2,<lg>,...), building first if the binary is
# absent or does not run here. Output to stdout and, when OUT is set, to $OUT/blst_g2.txt.
#   [OUT=dir] [SPPARK_BENCH=<anchor dir>] [BUILD=dir] bash anchors/blst-g2/run.sh [flags, which override the defaults]
# Defaults: 2^16..2^22, all online CPUs, 3 timed calls after 1 warm-up, no new size after 40 s, timeout 150 s.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
A="${SPPARK_BENCH:-$HERE/../../.anchors/sppark-bench}"
BIN="${BUILD:-$HERE/build}/bench_g2"
LOG=/dev/null
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && LOG="$OUT/blst_g2.txt"; fi
ARGS=(--sizes 16,17,18,19,20,21,22 --threads 0 --reps 3 --warmup 1 --deadline-s 40)
TIMEOUT=(); command -v timeout >/dev/null && TIMEOUT=(timeout -k 10 150)
{
  echo "# run.sh $(date -u +%FT%TZ) on $(uname -n), $(nproc) CPUs; anchors/blst-g2"
  grep '^blst ' "$A/VENDOR_COMMITS" 2>/dev/null | sed 's/^/# vendor: /'
  grep -m1 'model name' /proc/cpuinfo | sed 's/^/# cpu: /'
  grep -qw adx /proc/cpuinfo && echo "# cpu: adx (blst's mulx/adox code)" || echo "# cpu: no adx"
  if ! "$BIN" --help >/dev/null 2>&1; then
    echo "# run.sh: $BIN absent or not runnable here; building"
    SPPARK_BENCH="$A" FORCE=1 bash "$HERE/build.sh" || { echo "# run.sh: build failed"; exit 1; }
  fi
  echo "# run.sh: $BIN ${ARGS[*]} $*"
  ${TIMEOUT[@]+"${TIMEOUT[@]}"} "$BIN" "${ARGS[@]}" "$@"
  rc=$?
  echo "# run.sh: bench_g2 exit code $rc (0 ok, 1 usage, 3 host memory, 5 check failed, 124 timeout)"
  exit $rc
} 2>&1 | tee "$LOG"
