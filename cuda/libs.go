package cuda

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The GPU backend finds its libraries in two steps. First dlopen of the bare
// name (libnvrtc.so.13), which searches what the dynamic loader searches:
// LD_LIBRARY_PATH, then ld.so.cache and the default folders. Then, by full
// path, the folders below: the CUDA toolkit's, and the lib folders of
// NVIDIA's Python wheels (nvidia-cublas, nvidia-cuda-nvrtc), which pip puts
// in site-packages/nvidia/cu13/lib for CUDA 13 and
// site-packages/nvidia/{cublas,cuda_nvrtc}/lib for CUDA 12. This file lists
// the folders; it needs no cgo, so it is built and tested everywhere.

// libSearch lists candidate folders. root prefixes the fixed system paths
// (for tests); getenv reads the environment.
type libSearch struct {
	root   string
	getenv func(string) string
}

func defaultLibSearch() libSearch { return libSearch{getenv: os.Getenv} }

// toolkitDirs returns the CUDA toolkit's library folders that exist, in the
// order searched: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda, then every
// /usr/local/cuda-X.Y, newest first, then /opt/cuda.
func (s libSearch) toolkitDirs() []string {
	var tops []string
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := s.getenv(v); d != "" {
			tops = append(tops, d)
		}
	}
	tops = append(tops, s.root+"/usr/local/cuda")
	versioned, _ := filepath.Glob(s.root + "/usr/local/cuda-*")
	slices.SortFunc(versioned, func(a, b string) int { return compareVersions(b, a) })
	tops = append(tops, versioned...)
	tops = append(tops, s.root+"/opt/cuda")
	var dirs []string
	for _, top := range tops {
		dirs = append(dirs, top+"/lib64", top+"/targets/"+targetArch()+"/lib", top+"/lib")
	}
	return existingDirs(dirs)
}

// wheelDirs returns the lib folders of NVIDIA's Python wheels that exist:
// site-packages/nvidia/*/lib in the active virtual or conda environment,
// a virtual environment whose bin folder is on $PATH, $PYTHONPATH, the user's site-packages, pyenv's versions and the system's.
func (s libSearch) wheelDirs() []string {
	var sites []string
	add := func(pattern string) {
		m, _ := filepath.Glob(pattern)
		slices.SortFunc(m, func(a, b string) int { return compareVersions(b, a) })
		sites = append(sites, m...)
	}
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if d := s.getenv(v); d != "" {
			add(d + "/lib/python3*/site-packages")
		}
	}
	// A virtual environment whose bin folder is on PATH (python3 there is
	// that environment's) but not activated: images ship one so, e.g.
	// /opt/torch/.venv/bin on PATH and no VIRTUAL_ENV.
	for _, d := range filepath.SplitList(s.getenv("PATH")) {
		if d == "" {
			continue
		}
		if venv := filepath.Dir(d); fileExists(filepath.Join(venv, "pyvenv.cfg")) {
			add(venv + "/lib/python3*/site-packages")
		}
	}
	for _, d := range filepath.SplitList(s.getenv("PYTHONPATH")) {
		if d != "" {
			sites = append(sites, d)
		}
	}
	if home := s.getenv("HOME"); home != "" {
		add(home + "/.local/lib/python3*/site-packages")
		add(home + "/.pyenv/versions/*/lib/python3*/site-packages")
	}
	for _, p := range []string{
		"/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
		"/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
		"/opt/conda/lib/python3*/site-packages",
	} {
		add(s.root + p)
	}
	var dirs []string
	for _, site := range sites {
		m, _ := filepath.Glob(site + "/nvidia/*/lib")
		dirs = append(dirs, m...) // cu13 sorts before cublas and cuda_nvrtc
	}
	return existingDirs(dirs)
}

// driverDirs returns folders that may hold libcuda.so.1 outside the loader's
// path (container runtimes, WSL). Never the toolkit's lib64/stubs: its
// libcuda answers every call with CUDA_ERROR_STUB_LIBRARY.
func (s libSearch) driverDirs() []string {
	return existingDirs([]string{
		s.root + "/usr/local/nvidia/lib64", s.root + "/usr/lib/wsl/lib",
		s.root + "/usr/lib/" + targetArch() + "-gnu", s.root + "/usr/lib64",
	})
}

// targetArch is the toolkit's name for this machine's architecture.
func targetArch() string {
	if runtime.GOARCH == "arm64" {
		return "aarch64-linux"
	}
	return "x86_64-linux"
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// existingDirs returns the folders of dirs that exist, each once (by its
// real path), in order.
func existingDirs(dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		key := d
		if r, err := filepath.EvalSymlinks(d); err == nil {
			key = r
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, d)
		}
	}
	return out
}

// compareVersions orders paths that differ in embedded version numbers
// numerically ("cuda-12.10" after "cuda-12.9"), else as strings.
func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '/' })
	}
	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		switch {
		case ea == nil && eb == nil && na != nb:
			return na - nb
		case (ea != nil || eb != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}
