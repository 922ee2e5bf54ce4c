#!/usr/bin/env bash
# gpucheck.sh: build the cuda conformance tests and benchmarks into a binary
# here, and run them where an NVIDIA GPU is.
#
#   cuda/gpucheck.sh build   build bin/cuda.test (needs Go, cgo and a C compiler)
#   cuda/gpucheck.sh run     run bin/cuda.test (needs no Go: carry bin/ to the GPU machine)
#   cuda/gpucheck.sh         build, then run if this machine has a GPU
#
# run prints every test verbosely, then a summary of each operation's largest
# error ("maxerr" lines, CPU and GPU), then the benchmarks: GEMM GFLOP/s and
# one ranking-network update at 256 ... 16,384 candidates, CPU against GPU.
# It exits non-zero when a test fails or when no GPU backend opened.
# BENCHTIME (default 3x) is passed to -test.benchtime.
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
	mkdir -p bin
	go test -c -o bin/cuda.test ./cuda
	echo "built bin/cuda.test"
}

run() {
	local log=bin/gpu-check.log
	if [[ ! -x bin/cuda.test ]]; then
		echo "gpu-check: bin/cuda.test missing: run '$0 build' first" >&2
		exit 2
	fi
	# The toolkit's usual place, in case ld.so.conf does not list it.
	if [[ -d /usr/local/cuda/lib64 ]]; then
		export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64"
	fi
	bin/cuda.test -test.v -test.count=1 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	echo
	echo "== max error per operation (see cuda/cudatest/doc.go for the tolerances)"
	grep -E '^=== RUN +Test(CPU|GPU)Conformance$|maxerr' "$log" | sed -E 's/^=== RUN +//; s/^ +[a-z_]+\.go:[0-9]+: //'
	if grep -q -- '--- SKIP: TestGPUConformance' "$log"; then
		echo "gpu-check: no GPU backend opened:" >&2
		grep -A1 -- '=== RUN   TestGPUConformance' "$log" | tail -1 >&2
		rc=1
	fi
	echo
	echo "== benchmarks"
	bin/cuda.test -test.run '^$' -test.bench . -test.benchtime "${BENCHTIME:-3x}" || rc=1
	exit "$rc"
}

case "${1:-all}" in
build) build ;;
run) run ;;
all)
	build
	if [[ -e /dev/nvidia0 ]] || ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
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
