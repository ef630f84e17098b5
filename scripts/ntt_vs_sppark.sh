#!/usr/bin/env bash
# The NTT beside sppark's, in one call: the sppark anchor's NTT rows (if the anchor is carried in
# .anchors/sppark-bench, see shared/anchors/sppark-bench/README.md), then `zkgpu bench ntt` (the default build,
# --queued) with --sppark, which writes and prints the zkgpu/sppark ratios. (Until issue 23 it also timed the
# candidate builds NTT_FOLD, NTT_BIG_LAST and NTT_SKIP_ONE: data/nvidia-h200-20261203-bench-ntt; they were deleted.)
#
#   OUT=dir NTT_MIN_LOG=22 NTT_MAX_LOG=24 scripts/ntt_vs_sppark.sh
#
# Writes $OUT/sppark/sppark.txt and a run folder bench-ntt under $OUT/data (or $DATA). sppark's MSM rows
# are skipped (--msm-max 0) and so is its host-memory NTT (--ntt-host-lg 0): about 10 s plus its build.
# For kernel iteration; the recorded NTT + MSM comparison (one bench-sppark recording) is
# scripts/kernels_vs_sppark.sh (gpu_run.sh stage bench-sppark).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
DATA="${DATA:-$OUT/data}"
mkdir -p "$OUT/sppark" "$DATA"
MIN=${NTT_MIN_LOG:-22}
MAX=${NTT_MAX_LOG:-24}
REPEAT=${NTT_REPEAT:-7}
SP=.anchors/sppark-bench
SPARGS=()
if [ -x "$SP/run.sh" ] || [ -f "$SP/run.sh" ]; then
  OUT="$OUT/sppark" bash "$SP/run.sh" --msm-min 1 --msm-max 0 --ntt-min "$MIN" --ntt-max "$MAX" \
    --ntt-host-lg 0 --reps "$REPEAT" >/dev/null 2>&1
  rc=$?
  rows=$(grep -c '^ntt,' "$OUT/sppark/sppark.txt" 2>/dev/null || true)
  echo "sppark-bench exit code $rc (${rows:-0} NTT rows)"
  grep -q '^ntt,' "$OUT/sppark/sppark.txt" 2>/dev/null && SPARGS=(--sppark "$OUT/sppark/sppark.txt")
else
  echo "no $SP: zkgpu only"
fi
python3 -m zkgpu.app.cli bench ntt --min-log "$MIN" --max-log "$MAX" --repeat "$REPEAT" \
  --h-min-log "$MAX" --h-max-log "$MAX" --queued ${SPARGS[@]+"${SPARGS[@]}"} --out "$DATA"
