#!/usr/bin/env bash
# Everything that needs the GPU, in one call: GPU tests, kernel and H2D benchmarks, the scenario
# recording and (optionally) the notebook suite in live mode. Results land in one archive so a
# lent machine (which keeps nothing) can hand them back.
#
#   scripts/gpu_run.sh [STAGE ...]      stages: info record record-last-mile bench-h2d bench-load bench-ntt
#                                       bench-msm bench-prep tests tests-transfer tests-prep notebooks
#                                       (default: info record bench-h2d bench-ntt tests; each stage is
#                                       time-limited, see LIMIT_* below, so the whole fits one 10-min call)
#   ZKGPU_COMMIT=$(git rev-parse HEAD) names the commit in the manifests when the copy has no .git.
#   OUT=/some/dir scripts/gpu_run.sh    where logs and results.tar.gz go (default ./gpu-out)
#
# On a machine without network access put wheels of the missing packages in .whl/ (pip download);
# they are installed into /tmp/site first. Each stage's output is in $OUT/<stage>.log; a stage
# that fails does not stop the others, and the script exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
DATA="$OUT/data"
mkdir -p "$DATA"
# reserve the names of the runs already in data/ (empty folders, removed again before packing), so
# that a new run folder gets the name (suffix -1, -2 ...) it will have when copied into data/
reserved=()
mkdir -p "$DATA/last-mile"
for d in data/*/ data/last-mile/*/; do
  [ -d "$d" ] || continue
  n=${d#data/}; n=${n%/}
  if [ ! -e "$DATA/$n" ]; then mkdir "$DATA/$n" && reserved+=("$DATA/$n"); fi
done
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="$PWD:/tmp/site" JUPYTER_PATH=/tmp/site/share/jupyter PATH="/tmp/site/bin:$PATH"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(info record bench-h2d bench-ntt tests)
failed=()
# Per-stage time limits in seconds (the environment overrides them, e.g. LIMIT_record=300).
: "${LIMIT_info:=60}"
: "${LIMIT_tests:=170}"
: "${LIMIT_tests_transfer:=60}"
: "${LIMIT_bench_ntt:=60}"
: "${LIMIT_bench_msm:=90}"
: "${LIMIT_bench_h2d:=190}"
: "${LIMIT_bench_load:=90}"
: "${LIMIT_record:=150}"
: "${LIMIT_record_last_mile:=150}"
: "${LIMIT_bench_prep:=90}"
: "${LIMIT_tests_prep:=90}"
: "${LIMIT_notebooks:=220}"
run_stage() {
  local name=$1; shift
  local var="LIMIT_${name//-/_}"
  local limit="${!var:-300}"
  local t0=$SECONDS
  echo "=== $name (limit ${limit} s): $*"
  timeout --signal=INT --kill-after=15 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s"
  tail -n 25 "$OUT/$name.log"
  [ $rc -eq 0 ] || failed+=("$name")
}
for s in "${stages[@]}"; do
  case "$s" in
    info)      run_stage info python3 -m zkgpu.cli info ;;
    tests)     run_stage tests python3 -m pytest -q -m gpu --durations=15 -p no:cacheprovider tests ;;
    tests-transfer) run_stage tests-transfer python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_transfer.py ;;
    tests-prep) run_stage tests-prep python3 -m pytest -q -p no:cacheprovider tests/test_prep.py ;;
    # prep_msm variants (cpu, cpu_parallel, gpu) at 2^20..2^26 (PREP_MAX_LOG to shorten)
    bench-prep) run_stage bench-prep python3 -m zkgpu.cli bench prep --min-log 20 --max-log "${PREP_MAX_LOG:-26}" --repeat "${PREP_REPEAT:-5}" --out "$DATA" ;;
    bench-ntt) run_stage bench-ntt python3 -m zkgpu.cli bench ntt --min-log 16 --max-log 26 --repeat 5 --out "$DATA" ;;
    bench-msm) run_stage bench-msm python3 -m zkgpu.cli bench msm --repeat 3 --out "$DATA" ;;
    bench-h2d) run_stage bench-h2d python3 -m zkgpu.cli bench h2d --max-size 4GiB --repeat 3 --time-budget 110 --out "$DATA" ;;
    # the scenario matrix; its sweep and kernel benchmarks are the bench-* stages' job here
    bench-load) run_stage bench-load python3 -m zkgpu.cli bench load ${LOAD_LEVELS:+--levels $LOAD_LEVELS} --out "$DATA" ;;
    # HOST_LOAD=N: N host memory-load threads during the scenarios (zkgpu.hostload)
    record)    run_stage record python3 -m zkgpu.cli record --no-sweep --no-bench ${SYNTH_WORKERS:+--synth-workers $SYNTH_WORKERS} ${HOST_LOAD:+--host-load $HOST_LOAD} ${PARTITIONS:+--partitions $PARTITIONS} --out "$DATA" ;;
    # notebook 07b's set (baseline, the fix, prep_msm off the critical path ...) into data/last-mile/,
    # which only notebook 07b reads
    # SCENARIOS="a b ..." records those instead (names from zkgpu.record.SCENARIOS)
    record-last-mile) run_stage record-last-mile python3 -m zkgpu.cli record --no-sweep --no-bench $(for x in ${SCENARIOS:-$(python3 -c 'from zkgpu.record import LAST_MILE_SCENARIOS as s; print(" ".join(s))')}; do echo --scenario "$x"; done) ${SYNTH_WORKERS:+--synth-workers $SYNTH_WORKERS} ${HOST_LOAD:+--host-load $HOST_LOAD} ${PARTITIONS:+--partitions $PARTITIONS} --out "$DATA/last-mile" ;;
    notebooks) run_stage notebooks python3 -m zkgpu.cli report --mode live --out "$OUT/reports" ${NOTEBOOKS:+--only $NOTEBOOKS} ;;  # live: measures now
    *) echo "unknown stage $s"; failed+=("$s") ;;
  esac
done
for d in "${reserved[@]}"; do rmdir "$d" 2>/dev/null; done
rmdir "$DATA/last-mile" 2>/dev/null
tar -C "$OUT" -czf "$OUT/results.tar.gz" data $( [ -d "$OUT/reports" ] && echo reports ) 2>/dev/null
echo "results: $(du -h "$OUT/results.tar.gz" | cut -f1) in $OUT/results.tar.gz"
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED stages: ${failed[*]}"; exit 1; fi
echo "all stages ok"
