#!/usr/bin/env bash
# zkgpu's NTT and MSM beside sppark's, in ONE GPU call, gathered into ONE recording (issue 13):
#   1. builds the sppark anchor (.anchors/sppark-bench, see shared/anchors/sppark-bench/README.md), then our
#      PoRep-like sppark driver (anchors/sppark-porep, against the anchor's vendor/ and libblst.a) in the
#      background (CPU only, ~30 s + ~15 s) while zkgpu measures;
#   2. `zkgpu bench ntt` (forward, inverse, coset, inverse coset, natural order; compute_h at 2^24) and
#      `zkgpu bench msm` (uniform and PoRep-like scalars, device-resident; also over precomputed bases) at the sizes VS_SIZES;
#   3. the anchor's NTT rows (the same four transforms) and MSM rows (uniform scalars) at the same sizes, then
#      anchors/sppark-porep's MSM rows (the same sppark call on PoRep-like scalars: 45% zero, 45% one, 10% uniform,
#      zkgpu's distribution) at VS_SIZES, after zkgpu's runs, so the two never share the GPU;
#   4. `zkgpu bench sppark`: data/<gpu>-<date>-bench-sppark/ with sppark.txt, sppark_porep.txt, ntt.csv, msm.csv,
#      vs_sppark.csv and a manifest (sppark's commit from VENDOR_COMMITS, the zkgpu/sppark ratios per operation and
#      size, the PoRep-like MSM like for like, compute_h).
#
#   OUT=dir [DATA=dir] [VS_SIZES="22 24 26"] scripts/kernels_vs_sppark.sh
#
# Repeats: NTT_REPEAT (7), MSM_REPEAT (3), SPPARK_REPS (5, both sppark drivers); SPPARK_DEADLINE_S (110) and
# SPPARK_POREP_DEADLINE_S (40): a driver starts no new item after that many seconds of its own run. The anchor's part
# took 97 s on the H200 (data/nvidia-h200-20261201-bench-sppark); the PoRep-like driver adds its run (16.4 s there
# with --uniform-control) and its build (23.4 s after the anchor's 30 s, in the background, ending before zkgpu's runs do). zkgpu's run folders and the drivers' outputs stay in $OUT/vs-sppark/
# (not in $DATA). Without a GPU it says so and exits 2 (a dry run).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
DATA="${DATA:-$OUT/data}"
PY=${PYTHON:-python3}
read -r -a SIZES <<<"${VS_SIZES:-22 24 26}"
SCRATCH="$OUT/vs-sppark"
SP=.anchors/sppark-bench
SPW="${SPPARK_BUILD_DIR:-${TMPDIR:-/tmp}/zkgpu-sppark-bench}"  # writable copy of $SP where it is built and run
PR=anchors/sppark-porep
PRB="${SPPARK_POREP_BUILD_DIR:-${TMPDIR:-/tmp}/zkgpu-sppark-porep}"  # its binary (outside the checkout, kept when warm)
MIN=$(printf '%s\n' "${SIZES[@]}" | sort -n | head -1)
MAX=$(printf '%s\n' "${SIZES[@]}" | sort -n | tail -1)
MSM_SIZES=$(IFS=,; echo "${SIZES[*]}")
NTT_CMD=("$PY" -m zkgpu.app.cli bench ntt --min-log "$MIN" --max-log "$MAX" --repeat "${NTT_REPEAT:-7}"
         --h-min-log 24 --h-max-log 24 --out "$SCRATCH/zkgpu")
# --precomp-windows: the MSM over precomputed shifted bases too (zkgpu.gpu.msm.precomp; rows device_precomp at its
# rule's window, the table build timed apart), PRECOMP_WINDOWS=none leaves it out
MSM_CMD=("$PY" -m zkgpu.app.cli bench msm --sizes "$MSM_SIZES" --repeat "${MSM_REPEAT:-3}" --no-phases
         --precomp-windows "${PRECOMP_WINDOWS:-auto}" --out "$SCRATCH/zkgpu")
SP_ARGS=(--ntt-min "$MIN" --ntt-max "$MAX" --ntt-host-lg 0 --msm-min "$MIN" --msm-max "$MAX"
         --reps "${SPPARK_REPS:-5}" --no-pinned --deadline-s "${SPPARK_DEADLINE_S:-110}")
# --uniform-control: the driver also times the anchor's uniform call (rows devpts_devsc_uniform, not compared with
# zkgpu; the manifest's sppark_porep_control sets them against the anchor's devpts_devsc: ~1 = the drivers agree)
PR_ARGS=(--sizes "$MSM_SIZES" --reps "${SPPARK_REPS:-5}" --uniform-control --deadline-s "${SPPARK_POREP_DEADLINE_S:-40}")

if ! "$PY" -c 'import sys; from zkgpu.core import cuda as _cuda; sys.exit(0 if _cuda.gpu_available() else 3)' 2>/dev/null; then
  echo "no CUDA GPU here: dry run, nothing measured. On a GPU this script runs:"
  echo "  (background) cp -rp $SP/. $SPW/; bash $SPW/build.sh   $([ -f "$SP/run.sh" ] && echo "($SP present)" || echo "(MISSING: copy shared/anchors/sppark-bench to $SP)")"
  echo "  (background, then) SPPARK_BENCH=$SPW BUILD=$PRB bash $PR/build.sh"
  echo "  ${NTT_CMD[*]}"
  echo "  ${MSM_CMD[*]}"
  echo "  OUT=$SCRATCH/sppark bash $SPW/run.sh ${SP_ARGS[*]}"
  echo "  OUT=$SCRATCH/sppark SPPARK_BENCH=$SPW BUILD=$PRB bash $PR/run.sh ${PR_ARGS[*]}"
  echo "  $PY -m zkgpu.app.cli bench sppark --sppark $SCRATCH/sppark/sppark.txt --sppark-porep $SCRATCH/sppark/sppark_porep.txt --ntt-run <bench-ntt> --msm-run <bench-msm> --kernel stagewise --sizes $MSM_SIZES --out $DATA"
  exit 2
fi

rm -rf "$SCRATCH/zkgpu" "$SCRATCH/sppark"  # this script's own scratch: one bench-ntt and one bench-msm folder per run
mkdir -p "$SCRATCH/zkgpu" "$SCRATCH/sppark" "$DATA"
build_pid=
if [ -f "$SP/run.sh" ]; then
  # the carried anchor may be read-only (as shared/anchors is): build in a writable copy outside $OUT, which
  # keeps its build/ on a warm machine (cp -p keeps the sources' times, so build.sh finds the binary up to date)
  mkdir -p "$SPW" && cp -rp "$SP/." "$SPW/" && chmod -R u+w "$SPW" || { echo "cannot copy $SP to $SPW"; exit 1; }
  # then the PoRep-like driver against the anchor's vendor/ and libblst.a (exit 2: only that build failed)
  { bash "$SPW/build.sh" >"$SCRATCH/sppark-build.log" 2>&1 || exit 1
    SPPARK_BENCH="$SPW" BUILD="$PRB" bash "$PR/build.sh" >"$SCRATCH/sppark-porep-build.log" 2>&1 || exit 2; } &
  build_pid=$!
  trap '[ -n "$build_pid" ] && kill "$build_pid" 2>/dev/null' EXIT
else
  echo "no $SP: zkgpu only, no sppark rows (copy shared/anchors/sppark-bench to $SP and carry it)"
fi
t0=$SECONDS
"${NTT_CMD[@]}"; rc_ntt=$?
echo "=== bench ntt: rc=$rc_ntt at $((SECONDS - t0)) s"
"${MSM_CMD[@]}"; rc_msm=$?
echo "=== bench msm: rc=$rc_msm at $((SECONDS - t0)) s"
[ -n "$build_pid" ] || exit 1
wait "$build_pid"; rc_build=$?
build_pid=
echo "=== sppark build: rc=$rc_build at $((SECONDS - t0)) s ($(tail -1 "$SCRATCH/sppark-build.log"); $(tail -1 "$SCRATCH/sppark-porep-build.log" 2>/dev/null))"
OUT="$SCRATCH/sppark" bash "$SPW/run.sh" "${SP_ARGS[@]}" >/dev/null 2>&1
rc_sp=$?
echo "=== sppark-bench: rc=$rc_sp at $((SECONDS - t0)) s ($(grep -c '^ntt,' "$SCRATCH/sppark/sppark.txt" 2>/dev/null) NTT rows," \
     "$(grep -c '^msm,' "$SCRATCH/sppark/sppark.txt" 2>/dev/null) MSM rows; 0 ok, 2 no GPU, 4 CUDA error, 5 check failed)"
grep -E '^# (check|total|run.sh: build)|FAIL|SKIPPED' "$SCRATCH/sppark/sppark.txt" 2>/dev/null | head -20
OUT="$SCRATCH/sppark" SPPARK_BENCH="$SPW" BUILD="$PRB" bash "$PR/run.sh" "${PR_ARGS[@]}" >/dev/null 2>&1
rc_pr=$?
echo "=== sppark-porep: rc=$rc_pr at $((SECONDS - t0)) s ($(grep -c '^msm,' "$SCRATCH/sppark/sppark_porep.txt" 2>/dev/null) MSM rows)"
grep -E '^(# (check|scalars|total)|msm,)|FAIL|SKIPPED' "$SCRATCH/sppark/sppark_porep.txt" 2>/dev/null | head -12
porep=()  # without PoRep-like rows the recording sets zkgpu's PoRep-like MSM against sppark's uniform time (context)
grep -q '^msm,' "$SCRATCH/sppark/sppark_porep.txt" 2>/dev/null && porep=(--sppark-porep "$SCRATCH/sppark/sppark_porep.txt")
ntt_run=$(ls -d "$SCRATCH"/zkgpu/*-bench-ntt* 2>/dev/null | head -1)
msm_run=$(ls -d "$SCRATCH"/zkgpu/*-bench-msm* 2>/dev/null | head -1)
"$PY" -m zkgpu.app.cli bench sppark --sppark "$SCRATCH/sppark/sppark.txt" ${porep[@]+"${porep[@]}"} ${ntt_run:+--ntt-run "$ntt_run"} \
  ${msm_run:+--msm-run "$msm_run"} --kernel stagewise --sizes "$MSM_SIZES" --out "$DATA"
rc_gather=$?
echo "=== bench sppark: rc=$rc_gather at $((SECONDS - t0)) s"
[ "$rc_ntt" = 0 ] && [ "$rc_msm" = 0 ] && [ "$rc_sp" = 0 ] && [ "$rc_pr" = 0 ] && [ "$rc_gather" = 0 ]
