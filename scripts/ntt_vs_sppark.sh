#!/usr/bin/env bash
# The NTT candidates' timing, in one call (issue 23, "Decide, then delete"): the sppark anchor's NTT rows (if the
# anchor is carried in .anchors/sppark-bench, see shared/anchors/sppark-bench/README.md), then `zkgpu bench ntt`
# with the default build and each candidate build (--candidate) and --sppark, which prints the candidates' ratios to
# the default and writes and prints the zkgpu/sppark ratios.
#
#   OUT=dir NTT_MIN_LOG=22 NTT_MAX_LOG=24 NTT_CANDIDATES="fold skip-one-2" scripts/ntt_vs_sppark.sh
#   (NTT_CANDIDATES defaults to all four: fold big-last skip-one-1 skip-one-2; "" times the default build alone)
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
CANDIDATES=${NTT_CANDIDATES-fold big-last skip-one-1 skip-one-2}
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
CARGS=()
for c in $CANDIDATES; do CARGS+=(--candidate "$c"); done
python3 -m zkgpu.app.cli bench ntt --min-log "$MIN" --max-log "$MAX" --repeat "$REPEAT" ${CARGS[@]+"${CARGS[@]}"} \
  --h-min-log "$MAX" --h-max-log "$MAX" --queued ${SPARGS[@]+"${SPARGS[@]}"} --out "$DATA"
