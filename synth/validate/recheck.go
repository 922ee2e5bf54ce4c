package validate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
)

// ErrRecheck says that a stored task did not hold up when re-validated.
var ErrRecheck = errors.New("task does not re-validate")

// Checker re-validates stored tasks of one module in a sandbox, the way an
// episode would see them: the mutant file written in place (no schema, no
// overlay), the task's tests run with go test, then the gold patch applied.
type Checker struct {
	v *Validator
}

// NewChecker returns a Checker for tasks of the module rooted at dir (the
// task's repository at its version), copied into sb under workdir ("" for
// the workspace root) when first needed.
func NewChecker(dir string, sb env.Sandbox, workdir string, log zerolog.Logger) (*Checker, error) {
	v, err := New(dir, sb, Config{Workdir: workdir}, log)
	if err != nil {
		return nil, err
	}
	return &Checker{v: v}, nil
}

// Check re-validates rec: with its mutations applied every FAIL_TO_PASS
// test fails and every PASS_TO_PASS test passes; with the gold patch
// applied to the mutant every one of them passes. A task that does not
// hold up gives an error wrapping ErrRecheck that says which tests did
// what; so does one that is not a usable record (synth.TaskRecord's
// Validate), one whose paths leave the module (refused before anything is
// read or written) and one whose mutation names a file the module lacks.
// Other errors are faults of the sandbox or of ctx. The module's files are
// restored either way.
func (c *Checker) Check(ctx context.Context, rec synth.TaskRecord) error {
	v := c.v
	// The record's paths are checked before anything is read or written:
	// none may leave the module (the sandbox would only keep them inside
	// its workspace, which holds other modules too).
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("task %s: %w: %w", rec.ID, ErrRecheck, err)
	}
	if err := v.copyModule(ctx); err != nil {
		return err
	}
	edits := map[string][]synth.Edit{}
	for _, m := range rec.Mutations {
		edits[m.File] = append(edits[m.File], m.Edits...)
	}
	patches := synth.SplitPatch(rec.Patch)
	origs, mutants, fixed := map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	root, err := os.OpenRoot(v.dir) // reads stay in the module, symbolic links included
	if err != nil {
		return fmt.Errorf("task %s: %w", rec.ID, err)
	}
	defer root.Close()
	for file, es := range edits {
		orig, err := root.ReadFile(filepath.FromSlash(file))
		if err != nil {
			return fmt.Errorf("task %s: %w: mutation of %s: %v", rec.ID, ErrRecheck, file, err)
		}
		mutant, err := env.Splice(orig, es)
		if err != nil {
			return fmt.Errorf("task %s: %w: mutations of %s do not apply: %v", rec.ID, ErrRecheck, file, err)
		}
		p, ok := patches[file]
		if !ok {
			return fmt.Errorf("task %s: %w: the gold patch does not touch %s", rec.ID, ErrRecheck, file)
		}
		fix, err := synth.ApplyPatch(mutant, p)
		if err != nil {
			return fmt.Errorf("task %s: %w: gold patch of %s: %v", rec.ID, ErrRecheck, file, err)
		}
		origs[file], mutants[file], fixed[file] = orig, mutant, fix
	}
	defer func() {
		for file, orig := range origs {
			v.sb.WriteFile(context.WithoutCancel(ctx), v.path(file), orig)
		}
	}()

	pkg := rec.TestCmd[len(rec.TestCmd)-1]
	tests := slices.Concat(rec.FailToPass, rec.PassToPass)
	run := func(srcs map[string][]byte) (testRun, error) {
		for file, src := range srcs {
			if err := v.sb.WriteFile(ctx, v.path(file), src); err != nil {
				return testRun{}, err
			}
		}
		r, err := v.goCmd(ctx, "test", "-json", "-count=1", "-vet=off", "-run", runRegexp(tests), pkg)
		if err != nil {
			return testRun{}, err
		}
		return parseTestJSON(r), nil
	}
	bad, err := run(mutants)
	if err != nil {
		return fmt.Errorf("task %s: %w", rec.ID, err)
	}
	var problems []string
	if missing := without(rec.FailToPass, bad.failed); len(missing) > 0 && bad.built {
		problems = append(problems, fmt.Sprintf("with the bug, FAIL_TO_PASS tests did not fail: %s", strings.Join(missing, " ")))
	}
	if !bad.built {
		problems = append(problems, "the mutant does not build: "+firstLines(bad.raw, 3))
	}
	if missing := without(rec.PassToPass, bad.passed); len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("with the bug, PASS_TO_PASS tests did not pass: %s", strings.Join(missing, " ")))
	}
	good, err := run(fixed)
	if err != nil {
		return fmt.Errorf("task %s: %w", rec.ID, err)
	}
	if missing := without(tests, good.passed); len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("with the gold patch, tests did not pass: %s", strings.Join(missing, " ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("task %s: %w: %s", rec.ID, ErrRecheck, strings.Join(problems, "; "))
	}
	return nil
}

// without returns the elements of a not in b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
