#!/usr/bin/env bash
# Everything that needs the GPU, in one call: GPU tests, kernel and H2D benchmarks, the scenario
# recording and (optionally) the notebook suite in live mode. Results land in one archive so a
# lent machine (which keeps nothing) can hand them back.
#
#   scripts/gpu_run.sh [STAGE ...]      stages: info node record record-last-mile bench-h2d bench-load bench-ntt bench-ntt-sppark
#                                       bench-sppark bench-msm bench-msm-precomp bench-prep bench-keycheck tests tests-ntt tests-transfer tests-prep
#                                       tests-pipeline tests-keycheck
#                                       notebooks prove-setup prove record-real
#                                       (bench-ntt-sppark, bench-sppark need .anchors/sppark-bench; bench-ntt-sppark: the NTT's
#                                       default build (--queued) beside the sppark anchor's NTT, in one call;
#                                       bench-sppark: zkgpu's NTT + MSM beside sppark's, one bench-sppark recording)
#                                       (default: info record bench-h2d bench-ntt tests; each stage is
#                                       time-limited, see LIMIT_* below, so the whole fits one 10-min call)
#   GPU_TESTS="tests/test_x.py ..." limits the tests stage to those files (the whole GPU suite takes more than one call).
#   ZKGPU_COMMIT=$(git describe --always --dirty --abbrev=40) names the commit in the manifests when the copy has no .git.
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
mkdir -p "$DATA/last-mile" "$DATA/real" "$DATA/seed-regime"
for d in data/*/ data/last-mile/*/ data/real/*/ data/seed-regime/*/; do
  [ -d "$d" ] || continue
  n=${d#data/}; n=${n%/}
  if [ ! -e "$DATA/$n" ]; then mkdir "$DATA/$n" && reserved+=("$DATA/$n"); fi
done
export PYTHONUNBUFFERED=1
# byte-compile the package once, as pip install does: a fresh copy otherwise compiles ~290 modules in every
# command (0.5 s of each whole `zkgpu prove` in the H200 profile of 2026-12-03)
python3 -m compileall -q -j 0 zkgpu >/dev/null 2>&1 || echo "compileall: some modules did not byte-compile"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
[ -d /tmp/site ] && { python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1 || true; }
# /tmp/site also serves a warm machine's later calls, which need not carry the wheels again (the carry limit)
if [ -d /tmp/site ]; then
  export PYTHONPATH="$PWD:/tmp/site" JUPYTER_PATH=/tmp/site/share/jupyter PATH="/tmp/site/bin:$PATH"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
# zkgpu.gpu.msm.devsort's CUB radix sort (the MSM's sort, no host sync): nvcc builds its library once here
# (~5-10 s; cached in build/devsort/, kept on a warm machine), so that the stages' processes load it
# instead of each building it inside their time limits. If the build fails the MSM falls back to CuPy's
# synchronising sort and tests/test_devsort.py's GPU tests fail, naming the reason.
python3 -c 'from zkgpu.gpu.msm import devsort; print("devsort library:", devsort.build())' ||
  echo "devsort: the nvcc build failed (the MSM sorts with CuPy's sort)"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(info record bench-h2d bench-ntt tests)
failed=()
# Per-stage time limits in seconds (the environment overrides them, e.g. LIMIT_record=300).
: "${LIMIT_info:=60}"
: "${LIMIT_tests:=360}"  # raised from 170 s for the NTT/qap GPU tests of the fused kernels (removed since, tag pre-macro-cut)
: "${LIMIT_tests_transfer:=60}"
: "${LIMIT_bench_ntt:=90}"
: "${LIMIT_bench_ntt_sppark:=150}"
: "${LIMIT_bench_sppark:=230}"  # scripts/kernels_vs_sppark.sh at 2^22, 2^24, 2^26: 97 s on the H200 before the PoRep-like driver (+16 s run; build overlapped)
: "${LIMIT_tests_ntt:=240}"
: "${LIMIT_bench_msm:=90}"
: "${LIMIT_bench_msm_precomp:=150}"  # plain + precomputed-bases MSM at 2^22..2^26 (the 2^26 table: ~71 GB, seconds to build)
: "${LIMIT_bench_h2d:=190}"
: "${LIMIT_bench_load:=90}"
: "${LIMIT_record:=150}"
: "${LIMIT_record_last_mile:=270}"
: "${LIMIT_bench_prep:=90}"
: "${LIMIT_bench_keycheck:=420}"  # 2^19 and 2^24: GPU point rows and whole keys (~10 GB of points at 2^24), the CPU path at 2^19 (~1 min)
: "${LIMIT_tests_keycheck:=120}"
: "${LIMIT_tests_prep:=90}"
: "${LIMIT_tests_pipeline:=150}"
: "${LIMIT_notebooks:=220}"
: "${LIMIT_prove_setup:=560}"
: "${LIMIT_prove:=420}"
: "${LIMIT_record_real:=170}"
# Real proofs (zkgpu.groth16): node comes from the system or from the carried .node/ (scripts/node_carry.sh),
# unpacked once into /tmp/zkgpu-node. prove-setup builds PROVE_CIRCUIT (circom2 + snarkjs powers of tau,
# setup, witness) into build/circuits, which stays on a warm machine between calls; prove then proves it
# with --device gpu, checks the proof with snarkjs and runs `zkgpu bench prove` against snarkjs (PROVE_REPEAT whole
# commands each, PROVE_RESIDENT proofs with the key resident, and on the GPU --cold: build + first proof in empty caches).
# Default poseidon-600 (310,200 constraints, a 2^19 domain) with PROVE_SETUP=fast: zkgpu.groth16.setup's
# insecure set-up from known toxic waste (~a minute), because snarkjs's powers-of-tau preparation (FFTs
# over curve points in JavaScript) takes far longer than one 10-minute call at 2^19. PROVE_SETUP=snarkjs
# uses snarkjs's own set-up (resumable: each finished step's file is kept, so it can span several calls).
PROVE_CIRCUIT="${PROVE_CIRCUIT:-poseidon-600}"
PROVE_SETUP="${PROVE_SETUP:-fast}"
PROVE_DEVICE="${PROVE_DEVICE:-gpu}"  # cpu: a dry run of the stage on a machine without a GPU
# The two tarballs may come in two calls to one warm machine (with data/, both exceed the carry limit):
# each is unpacked once into /tmp/zkgpu-node, which the machine keeps while it stays warm.
node_setup() {
  if [ -z "${ZKGPU_NODE:-}" ] && ! command -v node >/dev/null; then
    mkdir -p /tmp/zkgpu-node
    local f
    for f in node node_modules; do  # Python's tarfile: no xz binary needed on the host
      [ -e "/tmp/zkgpu-node/$([ $f = node ] && echo bin/node || echo node_modules)" ] || [ ! -f ".node/$f.tar.xz" ] ||
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], **({"filter": "tar"} if hasattr(tarfile, "data_filter") else {}))' ".node/$f.tar.xz" /tmp/zkgpu-node
    done
    if [ -x /tmp/zkgpu-node/bin/node ]; then
      export ZKGPU_NODE=/tmp/zkgpu-node/bin/node  # zkgpu takes the node_modules of its prefix, /tmp/zkgpu-node/node_modules
      "$ZKGPU_NODE" --version >/dev/null 2>&1 || export LD_LIBRARY_PATH="/tmp/zkgpu-node/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  fi
}
prove_stage() {
  local d="build/circuits/$PROVE_CIRCUIT$([ "$PROVE_SETUP" = fast ] && echo -fast)" snarkjs
  node_setup
  [ -f "$d/circuit.wtns" ] || { echo "run the prove-setup stage first ($d/circuit.wtns missing)"; return 1; }
  local mods=node_modules; [ -n "${ZKGPU_NODE:-}" ] && [ -d "$(dirname "$(dirname "$ZKGPU_NODE")")/node_modules" ] && mods="$(dirname "$(dirname "$ZKGPU_NODE")")/node_modules"
  snarkjs=("${ZKGPU_NODE:-node}" "$mods/snarkjs/build/cli.cjs")
  python3 -m zkgpu.app.cli prove --zkey "$d/circuit.zkey" --wtns "$d/circuit.wtns" --proof "$OUT/proof.json" \
    --public "$OUT/public.json" --device "${PROVE_DEVICE:-gpu}" --timings "$OUT/prove_timings.json" || return 1
  cat "$OUT/prove_timings.json"
  "${snarkjs[@]}" groth16 verify "$d/vkey.json" "$OUT/public.json" "$OUT/proof.json" || return 1
  python3 -m zkgpu.app.cli bench prove --zkey "$d/circuit.zkey" --wtns "$d/circuit.wtns" --vkey "$d/vkey.json" \
    --device "${PROVE_DEVICE:-gpu}" --repeat "${PROVE_REPEAT:-3}" --resident "${PROVE_RESIDENT:-16}" $([ "${PROVE_DEVICE:-gpu}" = gpu ] && echo --cold) --out "$DATA"
}
# record-real: the pipeline proving PROVE_CIRCUIT (built by prove-setup) in REAL_SCENARIOS (default
# pinned_pool: 2 GPU workers, the pinned pool), REAL_PARTITIONS proofs (default 4; ~10 s of CPU G2 MSM
# each, on the partitions' prep threads, overlapping), 2 synthesis threads (the QAP evaluation is
# Python ints), every proof checked by snarkjs; one recording under data/real/ (notebook 10 replays it).
record_real_stage() {
  local d="build/circuits/$PROVE_CIRCUIT$([ "$PROVE_SETUP" = fast ] && echo -fast)" s args=()
  node_setup
  [ -f "$d/circuit.wtns" ] || { echo "run the prove-setup stage first ($d/circuit.wtns missing)"; return 1; }
  for s in ${REAL_SCENARIOS:-pinned_pool}; do args+=(--scenario "$s"); done
  python3 -m zkgpu.app.cli record --no-sweep --no-bench --device "${PROVE_DEVICE:-gpu}" --zkey "$d/circuit.zkey" --wtns "$d/circuit.wtns" \
    --vkey "$d/vkey.json" "${args[@]}" --partitions "${REAL_PARTITIONS:-4}" --synth-workers 2 --out "$DATA/real"
}
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
    info)      run_stage info python3 -m zkgpu.app.cli info ;;
    node)      node_setup; ls /tmp/zkgpu-node /tmp/zkgpu-node/bin 2>/dev/null ;;  # unpack what .node carries (see node_setup)
    tests)     run_stage tests python3 -m pytest -q -m gpu --durations=15 -p no:cacheprovider ${GPU_TESTS:-tests} ;;  # GPU_TESTS: a subset (files, -k ...)
    tests-transfer) run_stage tests-transfer python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_transfer.py ;;
    tests-prep) run_stage tests-prep python3 -m pytest -q -p no:cacheprovider tests/test_prep.py ;;
    # issue 12 (lock_scope="submit", prepared MSM bases, deferred checks, host-sync counts): the GPU
    # tests of the pipeline, the MSM, the deferred checks and the fault paths
    tests-pipeline) run_stage tests-pipeline python3 -m pytest -q -m gpu --durations=10 -p no:cacheprovider tests/test_pipeline.py tests/test_msm.py tests/test_qap.py tests/test_faults.py ;;
    # prep_msm variants (cpu, cpu_parallel, gpu) at 2^20..2^26 (PREP_MAX_LOG to shorten)
    bench-prep) run_stage bench-prep python3 -m zkgpu.app.cli bench prep --min-log 20 --max-log "${PREP_MAX_LOG:-26}" --repeat "${PREP_REPEAT:-5}" --out "$DATA" ;;
    # the key's point checks (issue 22: curve + endomorphism subgroup test, zkgpu.gpu.subgroup) at KEYCHECK_LOGS (19,24) on the GPU,
    # and the CPU path up to KEYCHECK_CPU_MAX_LOG (19); where prove-setup has built PROVE_CIRCUIT, also the witness check
    # (read its r1cs, check its witness, on the host's CPU); one data/<gpu>-<date>-bench-keycheck recording
    bench-keycheck) kc="build/circuits/$PROVE_CIRCUIT$([ "$PROVE_SETUP" = fast ] && echo -fast)"
                    run_stage bench-keycheck python3 -m zkgpu.app.cli bench keycheck --logs "${KEYCHECK_LOGS:-19,24}" --repeat "${KEYCHECK_REPEAT:-5}" --cpu-max-log "${KEYCHECK_CPU_MAX_LOG:-19}" \
                      $([ -f "$kc/circuit.r1cs" ] && [ -f "$kc/circuit.wtns" ] && echo --r1cs "$kc/circuit.r1cs" --wtns "$kc/circuit.wtns") --out "$DATA" ;;
    tests-keycheck) run_stage tests-keycheck python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_subgroup.py ;;
    bench-ntt) run_stage bench-ntt python3 -m zkgpu.app.cli bench ntt --min-log 16 --max-log 26 --repeat 5 --out "$DATA" ;;
    # the NTT's default build beside sppark at 2^22..2^24, compute_h at 2^24, --queued (needs .anchors/sppark-bench
    # carried along; NTT_MIN_LOG, NTT_MAX_LOG, NTT_REPEAT)
    bench-ntt-sppark) run_stage bench-ntt-sppark env OUT="$OUT" DATA="$DATA" scripts/ntt_vs_sppark.sh ;;
    # zkgpu's NTT and MSM beside sppark's at VS_SIZES (22 24 26) -> one data/<gpu>-<date>-bench-sppark recording;
    # sppark's MSM on uniform scalars (the anchor) and on PoRep-like ones (anchors/sppark-porep, built from the anchor)
    bench-sppark) run_stage bench-sppark env OUT="$OUT" DATA="$DATA" scripts/kernels_vs_sppark.sh ;;
    tests-ntt) run_stage tests-ntt python3 -m pytest -q -m gpu --durations=10 -p no:cacheprovider tests/test_ntt.py tests/test_qap.py ;;
    bench-msm) run_stage bench-msm python3 -m zkgpu.app.cli bench msm --repeat 3 --out "$DATA" ;;
    bench-msm-precomp) run_stage bench-msm-precomp python3 -m zkgpu.app.cli bench msm --sizes 22,24,26 --repeat 3 --precomp-windows "${PRECOMP_WINDOWS:-auto}" --out "$DATA" ;;
    bench-h2d) run_stage bench-h2d python3 -m zkgpu.app.cli bench h2d --max-size 4GiB --repeat 3 --time-budget 110 --out "$DATA" ;;
    # the scenario matrix; its sweep and kernel benchmarks are the bench-* stages' job here
    bench-load) run_stage bench-load python3 -m zkgpu.app.cli bench load ${LOAD_LEVELS:+--levels $LOAD_LEVELS} --out "$DATA" ;;
    # HOST_LOAD=N: N host memory-load threads during the scenarios (zkgpu.transfer.hostload); GPUS=N: N GPUs per scenario;
    # SCENARIOS="a b": only those scenarios
    record)    run_stage record python3 -m zkgpu.app.cli record --no-sweep --no-bench ${SYNTH_WORKERS:+--synth-workers $SYNTH_WORKERS} ${HOST_LOAD:+--host-load $HOST_LOAD} ${GPUS:+--gpus $GPUS} $(for x in ${SCENARIOS:-}; do echo --scenario "$x"; done) ${PARTITIONS:+--partitions $PARTITIONS} ${REPEATS:+--repeats $REPEATS} ${PREP_THREADS:+--prep-threads $PREP_THREADS} --out "$DATA" ;;
    # the seed regime: the baseline alone (one run of 16 partitions) for each SYNTH:LOAD:PREP of SEED_GRID
    # (synthesis threads, host memory-load threads, prep_msm threads) into data/seed-regime/; exports
    # SYNTH_WORKERS, HOST_LOAD and PREP_THREADS of the one nearest the seed (zkgpu.story.seed.choose_regime:
    # pageable H2D in 1-4.5 GB/s, median ntt_msm_h / median prep_msm nearest the seed's 1.82) for the
    # record stages that follow in this call
    seed-cal)  mkdir -p "$DATA/seed-regime"
               for g in ${SEED_GRID:-8:8:8 4:8:8 4:10:8 6:10:8 4:12:8 8:10:10}; do IFS=: read -r sw hl pt <<<"$g"
                 run_stage "seed-cal-$sw-$hl-$pt" python3 -m zkgpu.app.cli record --no-sweep --no-bench --scenario baseline --repeats 1 --synth-workers "$sw" --host-load "$hl" --prep-threads "$pt" --out "$DATA/seed-regime"; done
               read -r SYNTH_WORKERS HOST_LOAD PREP_THREADS < <(python3 -c 'import sys; from zkgpu.story.seed import choose_regime as c; print(*c(sys.argv[1]))' "$DATA/seed-regime") &&
                 export SYNTH_WORKERS HOST_LOAD PREP_THREADS && echo "seed-cal: SYNTH_WORKERS=$SYNTH_WORKERS HOST_LOAD=$HOST_LOAD PREP_THREADS=$PREP_THREADS" ;;
    prove-setup) node_setup; run_stage prove-setup python3 -m zkgpu.app.cli circuit "$PROVE_CIRCUIT" build/circuits $([ "$PROVE_SETUP" = fast ] && echo --fast) ;;
    prove)     export OUT DATA PROVE_CIRCUIT PROVE_SETUP PROVE_DEVICE; run_stage prove bash -c "$(declare -f node_setup prove_stage); prove_stage" ;;
    record-real) export OUT DATA PROVE_CIRCUIT PROVE_SETUP PROVE_DEVICE; run_stage record-real bash -c "$(declare -f node_setup record_real_stage); record_real_stage" ;;
    # notebook 07b's set (baseline, the fix, prep_msm off the critical path ...) into data/last-mile/,
    # which only notebook 07b reads
    # SCENARIOS="a b ..." records those instead (names from zkgpu.app.record.SCENARIOS); PARTITIONS
    # defaults to zkgpu.app.record.LAST_MILE_PARTITIONS (128: baseline and the story's steps over the same
    # partitions); without SCENARIOS the alternatives run zkgpu.app.record.LAST_MILE_ALTERNATIVE_PARTITIONS
    # (64: the twelve scenarios fit the stage's limit, about 210 s estimated from record-3 and a short run);
    # SYNTH_WORKERS / QUEUE_DEPTH override zkgpu.app.record's GPU defaults (GPU_SYNTH_WORKERS, GPU_QUEUE_DEPTH)
    record-last-mile) run_stage record-last-mile python3 -m zkgpu.app.cli record --no-sweep --no-bench ${REPEATS:+--repeats $REPEATS} ${PREP_THREADS:+--prep-threads $PREP_THREADS} $(for x in ${SCENARIOS:-$(python3 -c 'from zkgpu.app.record import LAST_MILE_SCENARIOS as s; print(" ".join(s))')}; do echo --scenario "$x"; done) $([ -z "${SCENARIOS:-}" ] && python3 -c 'from zkgpu.app.record import LAST_MILE_ALTERNATIVE_PARTITIONS as a; print(" ".join(f"--scenario-partitions {k}={v}" for k, v in a.items()))') ${SYNTH_WORKERS:+--synth-workers $SYNTH_WORKERS} ${QUEUE_DEPTH:+--queue-depth $QUEUE_DEPTH} ${HOST_LOAD:+--host-load $HOST_LOAD} --partitions ${PARTITIONS:-$(python3 -c 'from zkgpu.app.record import LAST_MILE_PARTITIONS as p; print(p)')} --out "$DATA/last-mile" ;;
    notebooks) run_stage notebooks python3 -m zkgpu.app.cli report --mode live --out "$OUT/reports" ${NOTEBOOKS:+--only $NOTEBOOKS} ;;  # live: measures now
    *) echo "unknown stage $s"; failed+=("$s") ;;
  esac
done
for d in "${reserved[@]}"; do rmdir "$d" 2>/dev/null; done
rmdir "$DATA/last-mile" "$DATA/real" "$DATA/seed-regime" 2>/dev/null
tar -C "$OUT" -czf "$OUT/results.tar.gz" data $( [ -d "$OUT/reports" ] && echo reports ) 2>/dev/null
echo "results: $(du -h "$OUT/results.tar.gz" | cut -f1) in $OUT/results.tar.gz"
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED stages: ${failed[*]}"; exit 1; fi
echo "all stages ok"
