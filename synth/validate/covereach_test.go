package validate

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/gotask/gotest"
)

// coverAgreement prepares package pkg of the module in dir (building its
// coverage binary with frog's TestMain), measures each stable test's
// coverage in one process and a process a test from that binary, and
// returns both, by test, and the tests whose blocks differ.
func coverAgreement(t *testing.T, dir, pkg string) (once, each map[string][]gotest.Block, differ []string) {
	t.Helper()
	ctx := context.Background()
	v, err := New(dir, sandbox(t), Config{MinTimeout: 2 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := v.Prepare(ctx, pkg)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Logf("%s: %d stable tests, prepared in %v", pkg, len(p.Stable), time.Since(start))
	start = time.Now()
	shared, err := gotest.CoverTests(ctx, v.sb, v.path(p.Rel), gotest.UpTo(p.Rel)+".frog/cover.test", v.path(".frog/cov"), gotest.UpTo(p.Rel)+".frog/cov", p.Stable, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one process: %v", time.Since(start))
	if !slices.ContainsFunc(shared, func(r gotest.TestCover) bool { return r.Ran && !r.Alone }) {
		t.Fatal("no test measured in one process")
	}
	start = time.Now()
	runs, err := gotest.CoverEach(ctx, v.sb, v.path(p.Rel), gotest.UpTo(p.Rel)+".frog/cover.test", v.path(".frog/cov"), gotest.UpTo(p.Rel)+".frog/cov", p.Stable, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a process a test: %v", time.Since(start))
	sorted := func(bs []gotest.Block) []gotest.Block {
		bs = slices.Clone(bs)
		slices.SortFunc(bs, func(a, b gotest.Block) int { return strings.Compare(a.String(), b.String()) })
		return bs
	}
	once, each = map[string][]gotest.Block{}, map[string][]gotest.Block{}
	for i, test := range p.Stable {
		if !runs[i].Ran || runs[i].Exit != 0 || !runs[i].Profiled {
			t.Errorf("%s: alone it did not pass with a profile: %+v", test, runs[i])
			continue
		}
		once[test], each[test] = sorted(shared[i].Blocks), sorted(runs[i].Blocks)
		if !slices.Equal(once[test], each[test]) {
			differ = append(differ, test)
		}
	}
	return once, each, differ
}

// TestCoverOnceAgrees: the blocks each test executes, measured for all
// tests in one process, are those a process a test measures.
func TestCoverOnceAgrees(t *testing.T) {
	once, each, differ := coverAgreement(t, tinyModule, "calc")
	if len(once) == 0 {
		t.Fatal("no test measured")
	}
	for _, test := range differ {
		t.Errorf("%s: one process %v, a process each %v", test, once[test], each[test])
	}
}

// TestCoverOnceAgreesOnModule is TestCoverOnceAgrees on a module of the
// machine's (FROG_COVER_MODULE=dir, FROG_COVER_PKG=./pkg): how often a
// shared process changes what a test covers.
func TestCoverOnceAgreesOnModule(t *testing.T) {
	dir, pkg := os.Getenv("FROG_COVER_MODULE"), os.Getenv("FROG_COVER_PKG")
	if dir == "" {
		t.Skip("FROG_COVER_MODULE not set")
	}
	once, each, differ := coverAgreement(t, dir, pkg)
	for _, test := range differ {
		var more, fewer []string
		for _, b := range once[test] {
			if !slices.Contains(each[test], b) {
				more = append(more, b.String())
			}
		}
		for _, b := range each[test] {
			if !slices.Contains(once[test], b) {
				fewer = append(fewer, b.String())
			}
		}
		t.Logf("%s: %d blocks alone; in one process %d more %v, %d fewer %v", test, len(each[test]), len(more), more, len(fewer), fewer)
	}
	t.Logf("%d of %d tests differ", len(differ), len(once))
	if os.Getenv("FROG_COVER_NOISE") != "" {
		_, again, noise := coverAgreement(t, dir, pkg)
		n := 0
		for test, bs := range each {
			if !slices.Equal(bs, again[test]) {
				n++
			}
		}
		t.Logf("noise: a process a test, twice: %d of %d tests differ (the second pair: %d)", n, len(each), len(noise))
	}
}
