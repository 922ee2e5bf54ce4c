#!/usr/bin/env bash
# gpucheck.sh: build the cuda conformance tests and benchmarks into a binary
# here, and run them where an NVIDIA GPU is.
#
#   cuda/gpucheck.sh build   build bin/cuda.test (needs Go, cgo and a C compiler)
#   cuda/gpucheck.sh run     run bin/cuda.test (needs no Go: carry bin/ to the GPU machine)
#   cuda/gpucheck.sh         build, then run if this machine has a GPU
#
# run reports whatever happens, in sections: "== libraries" (the CUDA
# libraries loaded: files, versions, the driver), "== tests" (every test,
# verbose, the grid cases at full size), "== failures", "== max error per
# operation" (CPU and GPU), "== skipped" (each skip and its reason),
# "== benchmarks" (GEMM GFLOP/s, one ranking-network update at 256 ... 16,384
# candidates, CPU against GPU) and "== result". A failing or hanging test
# does not stop it; it exits non-zero at the end when a test failed or timed
# out, a benchmark failed, or no GPU backend opened. On a machine with an
# NVIDIA device it sets FROG_REQUIRE_GPU=1, so that a GPU test whose backend
# does not open (a library missing) fails with the reason instead of
# skipping.
#
# Settings (environment):
#   BENCHTIME      -test.benchtime of the benchmarks (default 3x)
#   BENCH          -test.bench pattern (default .)
#   TEST_TIMEOUT   -test.timeout of the tests (default 240s): a hang prints
#                  every goroutine's stack and the report goes on
#   BENCH_TIMEOUT  -test.timeout of the benchmarks (default 240s)
#   CUDA_TEST      the test binary (default bin/cuda.test)
#   NEURAL_TEST    the neural policy's test binary (default bin/neural.test)
#   NEURAL_BENCHTIME, NEURAL_COUNT  its update benchmark's -test.benchtime
#                  (default 10x) and -test.count (default 3: a median of 3)
#   NEURAL_TIMEOUT its -test.timeout (default 180s)
#   GPUCHECK_LOG   the test log (default bin/gpu-check.log; .libs, .bench,
#                  .neural and .checkpoint.json, the GPU replay's checkpoint,
#                  beside it)
#   GPUCHECK_GPU   yes or no: whether this machine has an NVIDIA GPU (default: look)
# The defaults keep a run under the GPU machine's 10 minutes per command.
set -uo pipefail # not -e: run must report everything, then exit with the verdict
cd "$(dirname "$0")/.." || exit 2

build() {
	mkdir -p bin && go test -c -o bin/cuda.test ./cuda && echo "built bin/cuda.test" &&
		go test -c -o bin/neural.test ./policy/neural && echo "built bin/neural.test"
}

# have_gpu says whether an NVIDIA device is visible: a device node, or a GPU
# that nvidia-smi lists.
have_gpu() {
	case "${GPUCHECK_GPU:-}" in
	yes) return 0 ;;
	no) return 1 ;;
	esac
	compgen -G '/dev/nvidia[0-9]*' >/dev/null && return 0
	command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

# verbose prints a -test.v log without its "=== RUN/PAUSE/CONT" lines.
verbose() { grep -vE '^=== (RUN|PAUSE|CONT|NAME) '; }

# verdicts VERDICT LOG prints each test of LOG that ended in VERDICT (FAIL,
# SKIP) with the last line it logged (the reason), or "none".
verdicts() {
	awk -v v="--- $1: " '/^=== RUN /{msg=""} /^ +[a-z_]+\.go:[0-9]+: /{sub(/^ +[a-z_]+\.go:[0-9]+: /, ""); msg=$0}
		index($0, v){sub(/^ +/, ""); print $3 ": " msg; found=1} END{if (!found) print "none"}' "$2"
}

run() {
	local bin=${CUDA_TEST:-bin/cuda.test} log=${GPUCHECK_LOG:-bin/gpu-check.log}
	local rc=0 gpu=no trc brc
	local -a why=()
	if [[ ! -x $bin ]]; then
		echo "gpu-check: $bin missing: run '$0 build' first" >&2
		exit 2
	fi
	mkdir -p "$(dirname "$log")"
	if have_gpu; then
		gpu=yes
		export FROG_REQUIRE_GPU=1
	fi

	echo "== libraries"
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'
	fi
	echo "NVIDIA GPU on this machine: $gpu${FROG_REQUIRE_GPU:+ (FROG_REQUIRE_GPU=1: GPU tests fail rather than skip)}"
	echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
	"$bin" -test.run '^TestGPULibraries$' -test.v -test.count=1 -test.timeout 60s >"$log.libs" 2>&1
	verbose <"$log.libs" | grep -vE '^(PASS|FAIL|ok)$' | sed -E 's/^ +[a-z_]+\.go:[0-9]+: //'

	echo
	echo "== tests"
	"$bin" -test.v -test.count=1 -test.timeout "${TEST_TIMEOUT:-240s}" -cuda.large 2>&1 | tee "$log"
	trc=${PIPESTATUS[0]}
	if ((trc != 0)); then
		rc=1
		if grep -q '^panic: test timed out' "$log"; then
			why+=("the tests timed out after ${TEST_TIMEOUT:-240s} (goroutine stacks above)")
		else
			why+=("the tests exited $trc")
		fi
	fi

	echo
	echo "== failures"
	verdicts FAIL "$log"

	echo
	echo "== max error per operation (see cuda/cudatest/doc.go for the tolerances)"
	grep -E '^=== RUN +Test(CPU|GPU)Conformance$|maxerr' "$log" | sed -E 's/^=== RUN +//; s/^ +[a-z_]+\.go:[0-9]+: //'

	echo
	echo "== skipped"
	verdicts SKIP "$log"
	if ! grep -q -- '--- PASS: TestGPUConformance' "$log"; then
		rc=1
		if [[ $gpu == yes ]]; then
			why+=("an NVIDIA GPU is here but the GPU conformance tests did not pass (see failures)")
		else
			why+=("no NVIDIA GPU on this machine: the GPU path was not tested")
		fi
	fi

	echo
	echo "== benchmarks"
	"$bin" -test.run '^$' -test.bench "${BENCH:-.}" -test.benchtime "${BENCHTIME:-3x}" \
		-test.timeout "${BENCH_TIMEOUT:-240s}" 2>&1 | tee "$log.bench"
	brc=${PIPESTATUS[0]}
	if ((brc != 0)); then
		rc=1
		why+=("the benchmarks exited $brc")
	fi

	echo
	echo "== neural update (policy/neural: the real network's GRPO update on each backend against the CPU's; a replay of a real run's recorded batches, its checkpoint loaded on the CPU; the update's time, default and wide network)"
	local nbin=${NEURAL_TEST:-bin/neural.test} nrc
	if [[ -x $nbin ]]; then
		"$nbin" -test.run '^(TestUpdateAgreesAcrossBackends|TestReplayRecordedBatches)$' -test.v -test.count=1 -test.timeout "${NEURAL_TIMEOUT:-180s}" \
			-neural.batches policy/neural/testdata/recorded-batches.jsonl.gz -neural.checkpoint-out "$log.checkpoint.json" 2>&1 | verbose | tee "$log.neural"
		nrc=${PIPESTATUS[0]}
		if ((nrc != 0)); then
			rc=1
			why+=("the neural update checks exited $nrc")
		fi
		"$nbin" -test.run '^$' -test.bench '^(BenchmarkUpdate|BenchmarkReplayUpdate)$' -test.benchtime "${NEURAL_BENCHTIME:-10x}" -test.count "${NEURAL_COUNT:-3}" \
			-neural.batches policy/neural/testdata/recorded-batches.jsonl.gz -test.timeout "${NEURAL_TIMEOUT:-180s}" 2>&1 | tee -a "$log.neural"
		nrc=${PIPESTATUS[0]}
		if ((nrc != 0)); then
			rc=1
			why+=("the neural update benchmark exited $nrc")
		fi
	else
		echo "$nbin missing: built by '$0 build'"
		rc=1
		why+=("$nbin is missing: the real network's update was not checked")
	fi

	echo
	echo "== result"
	echo "tests: $(grep -c -- '--- PASS: ' "$log") passed, $(grep -c -- '--- FAIL: ' "$log") failed, $(grep -c -- '--- SKIP: ' "$log") skipped (subtests included)"
	if ((rc != 0)); then
		for w in "${why[@]}"; do echo "gpu-check: $w" >&2; done
		echo "gpu-check: FAIL"
	else
		echo "gpu-check: ok"
	fi
	exit "$rc"
}

case "${1:-all}" in
build) build ;;
run) run ;;
all)
	build || exit 1
	if have_gpu; then
		run
	else
		echo "gpu-check: no NVIDIA GPU on this machine: built bin/cuda.test only; carry bin/ to one and run '$0 run'"
	fi
	;;
*)
	echo "usage: $0 [build|run]" >&2
	exit 2
	;;
esac
