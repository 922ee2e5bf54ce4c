package synth

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/frognano/frog/env"
)

// TaskRecord is a synthesized task as the task store keeps it: the
// SWE-bench / SWE-smith instance fields of env.Task (flattened into the same
// JSON object) plus what frog knows about how the task was made.
type TaskRecord struct {
	// Task holds the instance fields, and what rebuilding the task's
	// workspace needs (its module's version, the package, the mutations).
	env.Task
	// Family is the operator family of the hardest mutation.
	Family string `json:"family,omitempty"`
	// Features are the inputs to the difficulty estimate.
	Features Features `json:"features"`
	// Validation records how the task was validated.
	Validation Validation `json:"validation"`
	// CoverageBlocks are the blocks ("file:line.col,line.col", file a base
	// name in the package's directory) of the original package that the
	// FAIL_TO_PASS and PASS_TO_PASS tests execute, and Coverage maps each of
	// those tests to the indexes of the blocks it executes: the spectrum
	// fault localisation (Ochiai, Tarantula) works from.
	CoverageBlocks []string         `json:"coverage_blocks,omitempty"`
	Coverage       map[string][]int `json:"coverage,omitempty"`
}

// Mutation is one injected change (env.Mutation: a task carries its own).
type Mutation = env.Mutation

// Edit replaces Old at byte Offset of the original file with New: the
// mutation operators' own edit, stored as they made it.
type Edit = env.Edit

// Features are the difficulty features of a task.
type Features struct {
	// K is the number of mutations.
	K int `json:"k"`
	// Complexity is the cyclomatic complexity of the mutated function.
	Complexity int `json:"complexity"`
	// FailToPass is the number of FAIL_TO_PASS tests.
	FailToPass int `json:"fail_to_pass"`
	// PointsAtLine says whether the failing tests' output names a mutated
	// line (of any of the mutations).
	PointsAtLine bool `json:"points_at_line"`
	// OchiaiRank is the rank (1 = most suspicious) of the mutated block
	// among covered blocks by Ochiai score (the best among the mutations);
	// 0 when unknown.
	OchiaiRank int `json:"ochiai_rank,omitempty"`
	// PackageLines is the number of lines of non-test Go in the package.
	PackageLines int `json:"package_lines,omitempty"`
}

// Validation is the record of a task's validation.
type Validation struct {
	// Outcome is "valid" for stored tasks.
	Outcome string `json:"outcome"`
	// BaselineSeconds is the slowest baseline run of the package's tests;
	// TimeoutSeconds the limit the mutant ran under.
	BaselineSeconds float64 `json:"baseline_seconds"`
	TimeoutSeconds  float64 `json:"timeout_seconds"`
	// Runs is the number of go test runs of the mutant.
	Runs int `json:"runs"`
	// TestsCovering is how many tests cover the mutated lines (0 when the
	// coverage map was not used).
	TestsCovering int `json:"tests_covering,omitempty"`
	// DiffHash is the normalized-diff hash the task is deduplicated by.
	DiffHash string `json:"diff_hash"`
}

// ErrInvalid marks a task record that lacks what a task needs, or names a
// file outside its module.
var ErrInvalid = errors.New("invalid task")

// Validate reports the first thing that makes r unusable as a task, in an
// error wrapping ErrInvalid: no instance_id, repo, patch, test_cmd,
// FAIL_TO_PASS or PASS_TO_PASS test, no mutation or a mutation without
// edits, or a file path (the task's file, a mutation's, the gold patch's,
// the package test_cmd tests) that leaves the module (see LocalPath).
func (r TaskRecord) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case r.ID == "":
		return bad("no instance_id")
	case r.Repo == "":
		return bad("no repo")
	case r.Patch == "":
		return bad("no patch")
	case len(r.TestCmd) == 0:
		return bad("no test_cmd")
	case len(r.FailToPass) == 0:
		return bad("no FAIL_TO_PASS test")
	case len(r.PassToPass) == 0:
		return bad("no PASS_TO_PASS test")
	case len(r.Mutations) == 0:
		return bad("no mutations")
	}
	if r.File != "" {
		if err := LocalPath(r.File); err != nil {
			return bad("file: %v", err)
		}
	}
	for i, m := range r.Mutations {
		if err := LocalPath(m.File); err != nil {
			return bad("mutation %d: %v", i+1, err)
		}
		if len(m.Edits) == 0 {
			return bad("mutation %d of %s: no edits", i+1, m.File)
		}
		for _, e := range m.Edits {
			if e.Offset < 0 {
				return bad("mutation %d of %s: edit at offset %d", i+1, m.File, e.Offset)
			}
		}
	}
	for file := range SplitPatch(r.Patch) {
		if err := LocalPath(file); err != nil {
			return bad("patch: %v", err)
		}
	}
	if len(r.TestCmd) > 2 && r.TestCmd[0] == "go" && r.TestCmd[1] == "test" {
		if pkg := r.TestCmd[len(r.TestCmd)-1]; !strings.HasPrefix(pkg, "-") {
			if err := LocalPath(pkg); err != nil {
				return bad("test_cmd package: %v", err)
			}
		}
	}
	return nil
}

// LocalPath checks that p, a slash-separated path relative to a module's
// root, names something inside the module: not empty, not absolute (nor a
// Windows volume path), and not leaving it through "..". A task's paths are
// refused unless they pass, for reads as for writes.
func LocalPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.ContainsRune(p, '\\') || strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q: want a slash-separated path", p)
	case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return fmt.Errorf("path %q is absolute: want one inside the module", p)
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("path %q leaves the module", p)
	}
	return nil
}

// ErrQuarantined says a task does not hold up on this machine: with its
// bug its FAIL_TO_PASS tests do not fail (or PASS_TO_PASS ones do not
// pass), or its gold patch no longer makes every deciding test pass. Such a
// task is set aside with its reason and never scored.
var ErrQuarantined = errors.New("task quarantined")
