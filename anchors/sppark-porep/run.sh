#!/usr/bin/env bash
# Run sppark's MSM on PoRep-like scalars on the GPU box (rows msm,<lg>,devpts_devsc_porep,...), building first
# if the binary is absent or does not run here. Output to stdout and, when OUT is set, to $OUT/sppark_porep.txt.
#   [OUT=dir] [SPPARK_BENCH=<anchor dir>] [BUILD=dir] bash anchors/sppark-porep/run.sh [flags, which override the defaults]
# Defaults: 2^22, 2^24, 2^26, 5 timed repeats after 1 warm-up, 2^20 distinct points, no new size after 60 s, timeout 300 s.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
A="${SPPARK_BENCH:-$HERE/../../.anchors/sppark-bench}"
BIN="${BUILD:-$HERE/build}/sppark_porep"
LOG=/dev/null
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && LOG="$OUT/sppark_porep.txt"; fi
ARGS=(--sizes 22,24,26 --base-lg 20 --reps 5 --warmup 1 --deadline-s 60)
TIMEOUT=(); command -v timeout >/dev/null && TIMEOUT=(timeout -k 10 300)
{
  echo "# run.sh $(date -u +%FT%TZ) on $(uname -n), $(nproc) CPUs; anchors/sppark-porep"
  sed 's/^/# vendor: /' "$A/VENDOR_COMMITS" 2>/dev/null
  grep -m1 'model name' /proc/cpuinfo | sed 's/^/# cpu: /'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
             --format=csv,noheader 2>/dev/null | sed 's/^/# nvidia-smi: /'
  if ! "$BIN" --help >/dev/null 2>&1; then
    echo "# run.sh: $BIN absent or not runnable here; building"
    SPPARK_BENCH="$A" FORCE=1 bash "$HERE/build.sh" || { echo "# run.sh: build failed"; exit 1; }
  fi
  echo "# run.sh: $BIN ${ARGS[*]} $*"
  ${TIMEOUT[@]+"${TIMEOUT[@]}"} "$BIN" "${ARGS[@]}" "$@"
  rc=$?
  echo "# run.sh: sppark_porep exit code $rc (0 ok, 1 usage, 2 no GPU, 3 host memory, 4 CUDA error, 5 check failed, 124 timeout)"
  exit $rc
} 2>&1 | tee "$LOG"
