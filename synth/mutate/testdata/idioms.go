package idioms

import (
	"errors"
	"os"
	"strconv"
	"sync"
)

var errEmpty = errors.New("empty")

// Parse reads a positive integer.
func Parse(s string) (int, error) {
	if s == "" {
		return 0, errEmpty
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Head returns the first n bytes of the file at path.
func Head(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.Read(buf); err != nil {
		return nil, err
	}
	return buf[1:n], nil
}

// Check validates s.
func Check(s string) error {
	if err := validate(s); err != nil {
		return err
	}
	return nil
}

func validate(s string) error {
	_, err := Parse(s)
	return err
}

// Span returns hi-lo.
func Span(lo, hi int) int { return sub(hi, lo) }

func sub(a, b int) int { return a - b }

type guarded struct {
	mu sync.Mutex
	v  int
}

func (g *guarded) Set(v int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.v = v
}
