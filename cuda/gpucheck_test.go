package cuda_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTestBinary stands in for bin/cuda.test in TestGPUCheckScript: the
// library probe skips, the tests fail (one test, after a maxerr line and a
// skip), the benchmarks print a line. It echoes its arguments.
const fakeTestBinary = `#!/usr/bin/env bash
echo "args: $*"
case "$*" in
*TestGPULibraries*)
	echo "=== RUN   TestGPULibraries"
	echo "    gpu_cgo_test.go:1: driver    libcuda.so.1: /fake/libcuda.so.1"
	echo "--- SKIP: TestGPULibraries (0.00s)"
	exit 0 ;;
*-test.bench*)
	echo "BenchmarkFake/cpu-2   3   100 ns/op   9.9 GFLOP/s"
	exit 0 ;;
esac
echo "=== RUN   TestCPUConformance"
echo "    cudatest.go:1: maxerr fake             abs 0  of-tolerance 0.000  (1 elements)"
echo "--- PASS: TestCPUConformance (0.00s)"
echo "=== RUN   TestGPUConformance"
echo "    cuda_test.go:1: no GPU backend here, GPU path not tested: fake reason"
echo "--- SKIP: TestGPUConformance (0.00s)"
echo "=== RUN   TestForcedFailure"
echo "    fake_test.go:1: forced"
echo "--- FAIL: TestForcedFailure (0.00s)"
echo "FAIL"
exit 1
`

// TestGPUCheckScript runs cuda/gpucheck.sh run on a fake test binary whose
// tests fail and checks that the whole report still prints and that the
// script exits non-zero at the end.
func TestGPUCheckScript(t *testing.T) {
	script := "gpucheck.sh"
	if _, err := os.Stat(script); err != nil {
		script = "cuda/gpucheck.sh" // run from the repository's root, as gpu-check does
	}
	if _, err := os.Stat(script); err != nil {
		t.Skip("gpucheck.sh not here")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("no bash: %v", err)
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "cuda.test")
	if err := os.WriteFile(fake, []byte(fakeTestBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, gpu := range []string{"no", "yes"} {
		t.Run("gpu="+gpu, func(t *testing.T) {
			cmd := exec.Command(bash, script, "run")
			// The script's settings from this environment (a gpu-check
			// run sets them) would change what the report says.
			var env []string
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				switch k {
				case "TEST_TIMEOUT", "BENCH_TIMEOUT", "BENCHTIME", "BENCH", "NEURAL_TEST", "NEURAL_TIMEOUT", "NEURAL_BENCHTIME", "NEURAL_COUNT", "FROG_REQUIRE_GPU":
					continue
				}
				env = append(env, kv)
			}
			cmd.Env = append(env, "CUDA_TEST="+fake, "GPUCHECK_LOG="+filepath.Join(dir, "gpu-check.log"), "GPUCHECK_GPU="+gpu,
				"NEURAL_TEST="+filepath.Join(dir, "neural.test"))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("gpucheck.sh run: %v, want exit status 1", err)
			}
			wants := []string{
				"== libraries", "driver    libcuda.so.1: /fake/libcuda.so.1",
				"== tests", "-test.timeout 240s", "-cuda.large",
				"== failures", "TestForcedFailure: forced",
				"== max error per operation", "maxerr fake",
				"== skipped", "TestGPUConformance: no GPU backend here, GPU path not tested: fake reason",
				"== benchmarks", "BenchmarkFake/cpu-2",
				"== neural update", "neural.test missing",
				"== result", "tests: 1 passed, 1 failed, 1 skipped", "gpu-check: the tests exited 1", "gpu-check: FAIL",
			}
			if gpu == "yes" {
				wants = append(wants, "FROG_REQUIRE_GPU=1", "an NVIDIA GPU is here but the GPU conformance tests did not pass")
			} else {
				wants = append(wants, "no NVIDIA GPU on this machine: the GPU path was not tested")
			}
			for _, want := range wants {
				if !strings.Contains(string(out), want) {
					t.Errorf("the report lacks %q", want)
				}
			}
			if t.Failed() {
				t.Logf("report:\n%s", out)
			}
		})
	}
}
