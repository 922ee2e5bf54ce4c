package cuda

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLibSearchDirs(t *testing.T) {
	root := t.TempDir()
	mk := func(dirs ...string) {
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("usr/local/cuda-12.9/lib64", "usr/local/cuda-12.10/lib64", "usr/local/cuda-13.0/lib64",
		"usr/local/cuda-13.0/lib64/stubs", "opt/cuda/lib64", "home/x/cuda/lib64",
		"venv/lib/python3.12/site-packages/nvidia/cu13/lib",
		"venv/lib/python3.12/site-packages/nvidia/cublas/lib",
		"venv/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib",
		"venv/lib/python3.12/site-packages/nvidia/cuda_nvrtc/include",
		"home/x/.local/lib/python3.11/site-packages/nvidia/cublas/lib",
		"usr/local/lib/python3.10/dist-packages/nvidia/cuda_nvrtc/lib",
		"usr/local/nvidia/lib64",
		"opt/torch/.venv/bin", "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib",
		"opt/other/bin", "opt/other/lib/python3.12/site-packages/nvidia/cu13/lib")
	// A virtual environment on PATH, not activated; a bin folder on PATH
	// that is no environment's (no pyvenv.cfg) adds nothing.
	if err := os.WriteFile(filepath.Join(root, "opt/torch/.venv/pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// /usr/local/cuda is the usual link to one version: searched once.
	if err := os.Symlink(filepath.Join(root, "usr/local/cuda-13.0"), filepath.Join(root, "usr/local/cuda")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"CUDA_HOME":   filepath.Join(root, "home/x/cuda"),
		"VIRTUAL_ENV": filepath.Join(root, "venv"),
		"HOME":        filepath.Join(root, "home/x"),
		"PATH":        filepath.Join(root, "opt/torch/.venv/bin") + ":" + filepath.Join(root, "opt/other/bin") + ":/usr/bin",
	}
	s := libSearch{root: root, getenv: func(k string) string { return env[k] }}
	rel := func(dirs []string) []string {
		var out []string
		for _, d := range dirs {
			r, err := filepath.Rel(root, d)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"toolkit", rel(s.toolkitDirs()), []string{
			"home/x/cuda/lib64", "usr/local/cuda/lib64", "usr/local/cuda-12.10/lib64",
			"usr/local/cuda-12.9/lib64", "opt/cuda/lib64",
		}},
		{"wheels", rel(s.wheelDirs()), []string{
			"venv/lib/python3.12/site-packages/nvidia/cu13/lib",
			"venv/lib/python3.12/site-packages/nvidia/cublas/lib",
			"venv/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib",
			"opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib",
			"home/x/.local/lib/python3.11/site-packages/nvidia/cublas/lib",
			"usr/local/lib/python3.10/dist-packages/nvidia/cuda_nvrtc/lib",
		}},
		{"driver", rel(s.driverDirs()), []string{"usr/local/nvidia/lib64"}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s folders (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int // sign
	}{
		{"/usr/local/cuda-12.10", "/usr/local/cuda-12.9", 1},
		{"/usr/local/cuda-13.0", "/usr/local/cuda-12.9", 1},
		{"/usr/local/cuda-12.4", "/usr/local/cuda-12.4", 0},
		{"lib/python3.12/site-packages", "lib/python3.9/site-packages", 1},
	} {
		got := compareVersions(tc.a, tc.b)
		if (got > 0) != (tc.want > 0) || (got == 0) != (tc.want == 0) {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.want)
		}
	}
}
