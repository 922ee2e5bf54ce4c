package mutate

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const naturalSrc = `package p

func Sum(s []int) int {
	t := 0
	for i := 0; i < len(s); i++ {
		t += s[i]
	}
	return t
}

func Max(s []int) int {
	m := s[0]
	for i := 0; i < len(s); i++ {
		if s[i] > m {
			m = s[i]
		}
	}
	return m
}

func Count(s []int, v int) int {
	n := 0
	for i := 0; i <= len(s); i++ {
		if s[i] == v {
			n++
		}
	}
	return n
}
`

func TestLMDelta(t *testing.T) {
	src := []byte(naturalSrc)
	lm := NewLM([][]byte{src})
	off := strings.Index(naturalSrc, "i <= len")
	at := off + len("i ")
	fix := lm.Delta(src, []Edit{{Offset: at, Old: "<=", New: "<"}})
	wrong := lm.Delta(src, []Edit{{Offset: at, Old: "<=", New: ">="}})
	if fix <= 0 || fix <= wrong {
		t.Errorf("Delta: the module's idiom (<) %.2f bits, another flip (>=) %.2f: want the idiom positive and above", fix, wrong)
	}
	// Leave one out: the buggy line does not vouch for itself, and a
	// line the module writes three times is less surprising than it.
	line := strings.Count(naturalSrc[:off], "\n") + 1
	bug, idiom := lm.Surprise(src, line), lm.Surprise(src, 5)
	if bug <= idiom {
		t.Errorf("Surprise: the buggy line %.2f bits a token, the idiom's %.2f: want the bug more surprising", bug, idiom)
	}
	// The counts are as they were after scoring.
	if again := lm.Delta(src, []Edit{{Offset: at, Old: "<=", New: "<"}}); again != fix {
		t.Errorf("Delta changed the model: %.4f then %.4f", fix, again)
	}
	if d := lm.Delta(src, []Edit{{Offset: at, Old: "<", New: ">"}}); d != 0 {
		t.Errorf("an edit that does not apply: Delta %.2f, want 0", d)
	}
	var nilLM *LM
	if nilLM.Delta(src, []Edit{{Offset: at, Old: "<=", New: "<"}}) != 0 || nilLM.Surprise(src, 3) != 0 {
		t.Error("a nil model scores 0")
	}
}

// goTypesSources are go/types' non-test files from GOROOT: a large
// package (about 60,000 lines) to time the model on.
func goTypesSources(b *testing.B) [][]byte {
	dir := filepath.Join(runtime.GOROOT(), "src", "go", "types")
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Skip(err)
	}
	var srcs [][]byte
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			data, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				b.Fatal(err)
			}
			srcs = append(srcs, data)
		}
	}
	return srcs
}

// BenchmarkLM times building the model of go/types (once a task in the
// harness) and scoring one edit (once a candidate).
func BenchmarkLM(b *testing.B) {
	srcs := goTypesSources(b)
	lines := 0
	for _, s := range srcs {
		lines += strings.Count(string(s), "\n")
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			NewLM(srcs)
		}
		b.ReportMetric(float64(lines), "lines")
	})
	b.Run("delta", func(b *testing.B) {
		lm := NewLM(srcs)
		var src []byte
		at := -1
		for _, s := range srcs {
			if at = strings.Index(string(s), " < "); at >= 0 {
				src = s
				break
			}
		}
		if at < 0 {
			b.Skip("no < in go/types")
		}
		e := []Edit{{Offset: at + 1, Old: "<", New: "<="}}
		for b.Loop() {
			lm.Delta(src, e)
		}
	})
}
