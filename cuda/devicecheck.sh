#!/usr/bin/env bash
# devicecheck.sh: the GPU machine's whole check in one call, for the device
# tool (docs/cuda.md, "The first GPU run"). Here: `make gpu-check-build`, then
# carry bin/ and run `bash cuda/devicecheck.sh` there. It records the machine
# (date, nvidia-smi, the CUDA libraries on disk) and runs `cuda/gpucheck.sh
# run`, writing everything under $OUT (default bin/out): machine.txt,
# report.txt (the whole report) and gpu-check.log with its .libs, .bench,
# .neural and .checkpoint.json (the GPU replay's checkpoint, for a CPU to
# load here). It exits with gpucheck's status.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-bin/out}
mkdir -p "$out"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "uname: $(uname -srm)"
	echo "glibc: $(ldd --version 2>&1 | head -1)"
	echo "cpus: $(nproc)"
	nvidia-smi 2>&1
	nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,clocks.max.mem --format=csv 2>&1
	echo "PATH=$PATH"
	echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
	echo "-- libcuda, libnvrtc, libcublas on disk"
	find / -xdev \( -name 'libcuda.so*' -o -name 'libnvrtc.so*' -o -name 'libcublas.so*' -o -name 'libcublasLt.so*' \) 2>/dev/null | sort | head -40
	ls -l /usr/local/nvidia/lib64 2>/dev/null | head -20
} >"$out/machine.txt" 2>&1
GPUCHECK_LOG="$out/gpu-check.log" bash cuda/gpucheck.sh run 2>&1 | tee "$out/report.txt"
exit "${PIPESTATUS[0]}"
