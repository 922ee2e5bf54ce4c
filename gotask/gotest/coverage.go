package gotest

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Block is one coverage block of a cover profile, in a file named by its
// base name (a package's files share one directory).
type Block struct {
	File                string
	StartLine, StartCol int
	EndLine, EndCol     int
}

// String formats the block as cover profiles do: "file:l.c,l.c".
func (b Block) String() string {
	return fmt.Sprintf("%s:%d.%d,%d.%d", b.File, b.StartLine, b.StartCol, b.EndLine, b.EndCol)
}

// overlaps reports whether the block covers any line in [lo, hi] of file.
func (b Block) overlaps(file string, lo, hi int) bool {
	return b.File == file && b.StartLine <= hi && lo <= b.EndLine
}

// CoverageMap says which blocks of a package each test executes.
type CoverageMap struct {
	// Tests maps a top-level test to the blocks it covers.
	Tests map[string][]Block
}

// Covering returns, sorted, the tests that execute any block overlapping
// lines [lo, hi] of file (a base name).
func (c *CoverageMap) Covering(file string, lo, hi int) []string {
	var out []string
	for t, blocks := range c.Tests {
		for _, b := range blocks {
			if b.overlaps(file, lo, hi) {
				out = append(out, t)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Compact returns the map in the task store's form, restricted to tests:
// the blocks any of them covers ("file:line.col,line.col", sorted) and, per
// test, the indexes of its blocks in that list.
func (c *CoverageMap) Compact(tests []string) (blocks []string, byTest map[string][]int) {
	index := map[Block]int{}
	var all []Block
	for _, t := range tests {
		for _, b := range c.Tests[t] {
			if _, ok := index[b]; !ok {
				index[b] = 0
				all = append(all, b)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].String() < all[j].String() })
	blocks = make([]string, len(all))
	for i, b := range all {
		index[b] = i
		blocks[i] = b.String()
	}
	byTest = map[string][]int{}
	for _, t := range tests {
		if bs, ok := c.Tests[t]; ok {
			ix := make([]int, len(bs))
			for i, b := range bs {
				ix[i] = index[b]
			}
			sort.Ints(ix)
			byTest[t] = ix
		}
	}
	return blocks, byTest
}

// OchiaiRank ranks the block holding lines [lo, hi] of file among all
// covered blocks by the Ochiai suspiciousness failed(b) /
// sqrt(totalFailed * (failed(b) + passed(b))), computed from the given
// failing and passing tests; ties share the better rank. It returns 0 when
// no block overlaps the lines.
func (c *CoverageMap) OchiaiRank(file string, lo, hi int, failing, passing []string) int {
	type counts struct{ f, p int }
	per := map[Block]*counts{}
	tally := func(tests []string, fail bool) {
		for _, t := range tests {
			for _, b := range c.Tests[t] {
				n := per[b]
				if n == nil {
					n = &counts{}
					per[b] = n
				}
				if fail {
					n.f++
				} else {
					n.p++
				}
			}
		}
	}
	tally(failing, true)
	tally(passing, false)
	score := func(n *counts) float64 {
		if n.f == 0 {
			return 0
		}
		return float64(n.f) / math.Sqrt(float64(len(failing)*(n.f+n.p)))
	}
	target := -1.0
	for b, n := range per {
		if b.overlaps(file, lo, hi) {
			target = max(target, score(n))
		}
	}
	if target < 0 {
		return 0
	}
	rank := 1
	for _, n := range per {
		if score(n) > target {
			rank++
		}
	}
	return rank
}

// ParseProfile reads the blocks a cover profile records as executed.
func ParseProfile(data []byte) ([]Block, error) {
	var blocks []Block
	err := readProfile(data, func(b Block, count int) {
		if count > 0 {
			blocks = append(blocks, b)
		}
	})
	return blocks, err
}

// profileCounts reads a cover profile's count of each block.
func profileCounts(data []byte) (map[Block]int, error) {
	counts := map[Block]int{}
	err := readProfile(data, func(b Block, count int) { counts[b] += count })
	return counts, err
}

// readProfile calls f with each block of a cover profile and its count.
func readProfile(data []byte, f func(Block, int)) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 && strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		// import/path/file.go:12.3,14.2 2 1
		i := strings.LastIndexByte(line, ':')
		fields := strings.Fields(line[i+1:])
		if i < 0 || len(fields) != 3 {
			return fmt.Errorf("cover profile line %d: malformed %q", n, line)
		}
		count, err := strconv.Atoi(fields[2])
		if err != nil {
			return fmt.Errorf("cover profile line %d: %w", n, err)
		}
		var b Block
		if _, err := fmt.Sscanf(fields[0], "%d.%d,%d.%d", &b.StartLine, &b.StartCol, &b.EndLine, &b.EndCol); err != nil {
			return fmt.Errorf("cover profile line %d: %w", n, err)
		}
		b.File = path.Base(line[:i])
		f(b, count)
	}
	return sc.Err()
}
