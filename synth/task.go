package synth

import (
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth/mutate"
)

// TaskRecord is a synthesized task as the task store keeps it: the
// SWE-bench / SWE-smith instance fields of env.Task (flattened into the same
// JSON object) plus what frog knows about how the task was made.
type TaskRecord struct {
	env.Task
	// Version is the module version the code comes from, when known.
	Version string `json:"version,omitempty"`
	// Package is the import path of the mutated package.
	Package string `json:"package,omitempty"`
	// Family is the operator family of the hardest mutation.
	Family string `json:"family,omitempty"`
	// Mutations are the injected changes, each with its exact inverse.
	Mutations []Mutation `json:"mutations,omitempty"`
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

// Mutation is one injected change: Edits applied to the original file make
// the bug; applied in reverse they undo it.
type Mutation struct {
	Op      string `json:"op"`
	Family  string `json:"family"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line"`
	Func    string `json:"func,omitempty"`
	Desc    string `json:"desc,omitempty"`
	Edits   []Edit `json:"edits"`
}

// Edit replaces Old at byte Offset of the original file with New: the
// mutation operators' own edit, stored as they made it.
type Edit = mutate.Edit

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
