package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkCopyTree copies FROG_BENCH_TEMPLATE (a module, say) into a
// new directory per iteration, on the host.
func BenchmarkCopyTree(b *testing.B) {
	tmpl := os.Getenv("FROG_BENCH_TEMPLATE")
	if tmpl == "" {
		b.Skip("FROG_BENCH_TEMPLATE names no template")
	}
	src, err := os.OpenRoot(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	base := b.TempDir()
	i := 0
	for b.Loop() {
		d := filepath.Join(base, strconv.Itoa(i))
		i++
		os.Mkdir(d, 0o755)
		dst, err := os.OpenRoot(d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := copyTree(src, dst); err != nil {
			b.Fatal(err)
		}
		dst.Close()
	}
}
