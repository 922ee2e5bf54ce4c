package env

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Harness runs the tools that need to know how a task's tests work:
// structured test runs, coverage, repair candidates, tries of candidates,
// and the verdict that decides the reward. The episode calls it from its own
// goroutine, one call at a time per episode; one Harness serves every
// episode of a run, concurrently. Each call blocks until done or ctx is
// cancelled. A fault of the sandbox or of the machine wraps ErrInfra; an
// error that does not is the agent's mistake (an unknown test name, a
// candidate that does not apply) and is shown to it as the step's output.
//
// What a harness computes depends only on the task and the workspace's
// state (ws): it may answer from an outcome cache keyed by (task, ws.Hash(),
// the call), and says so in the Cost. The verdict trusts only the harness's
// own files: the task's test files as the task has them, whatever the agent
// wrote over them, and a real build of the edited tree, never a schema's
// word alone.
type Harness interface {
	// RunTests runs the named tests (the task's deciding tests when none)
	// and reports each one's verdict.
	RunTests(ctx context.Context, sb Sandbox, ws *Workspace, tests []string) (TestReport, Cost, error)
	// Coverage runs the named tests (the deciding ones when none), each
	// alone, and reports the lines each ran.
	Coverage(ctx context.Context, sb Sandbox, ws *Workspace, tests []string) (CoverageReport, Cost, error)
	// Candidates lists repair candidates at lines (template edits of the
	// code as the workspace has it now), in the order of lines, and at each
	// line in the harness's fixed order of templates; IDs are list indexes.
	Candidates(ctx context.Context, sb Sandbox, ws *Workspace, lines []Line) ([]Candidate, error)
	// Try runs the deciding tests once per candidate list[id] for each of
	// ids, the candidate applied over the workspace, which is left as it
	// is. list is the whole list the candidates came from (a harness builds
	// one schema binary for it).
	Try(ctx context.Context, sb Sandbox, ws *Workspace, list []Candidate, ids []int) ([]TryResult, Cost, error)
	// Verdict builds the edited tree for real and runs the deciding tests
	// with the task's own test files: Pass when every one passes and
	// nothing in the change or the run says the result was forged
	// (Suspected says what did; such a verdict never passes).
	Verdict(ctx context.Context, sb Sandbox, ws *Workspace) (Verdict, Cost, error)
}

// Verdict is what a harness decided of a submitted workspace: the reward
// is 1 when Pass. Suspected, when set, says why the harness believes the
// agent's code tried to forge the verdict instead of fixing the bug (a
// change no repair needs, or a test run whose evidence does not add up);
// Pass is then false, and the episode is counted as a suspected reward
// hack in every summary and export.
type Verdict struct {
	Pass      bool
	Suspected string
}

// Cost is what a harness call cost: the test executions it ran (a run of a
// test binary or a go test; 0 when the cache answered) and whether the
// outcome cache answered.
type Cost struct {
	Executions int
	Cached     bool
}

// Workspace is an episode's record of how its workspace differs from the
// task's start: the current content of every file its actions changed.
// Harnesses key their caches by Hash and lay the changes over the task's
// files as they need. A Workspace is owned by its episode; harnesses read
// it during a call and keep nothing of it but its hash and copies.
type Workspace struct {
	Task *Task
	// files holds every file the episode wrote, in the order first
	// written: its content at the start (orig; nil: it did not exist) and
	// now (data), and whether the two differ. An episode writes few files,
	// so this is a list.
	files []wsFile
	// changed is Changed's map, made when asked for and dropped by writes.
	changed map[string][]byte
	hash    string
}

type wsFile struct {
	path       string
	orig, data []byte
	differs    bool
}

func (w *Workspace) file(path string) *wsFile {
	for i := range w.files {
		if w.files[i].path == path {
			return &w.files[i]
		}
	}
	return nil
}

// original returns file's content at the start, and whether the
// episode has written it.
func (w *Workspace) original(file string) ([]byte, bool) {
	if f := w.file(file); f != nil {
		return f.orig, true
	}
	return nil, false
}

// current returns file's content when it differs from the start, and
// whether it does.
func (w *Workspace) current(file string) ([]byte, bool) {
	if f := w.file(file); f != nil && f.differs {
		return f.data, true
	}
	return nil, false
}

// NewWorkspace is the state of a fresh workspace of task.
func NewWorkspace(task *Task) *Workspace { return &Workspace{Task: task} }

// Changed returns the current content of every file that differs from the
// task's start, by workspace path. The map is the workspace's: read it only.
func (w *Workspace) Changed() map[string][]byte {
	if w.changed == nil {
		w.changed = make(map[string][]byte, len(w.files))
		for i := range w.files {
			if f := &w.files[i]; f.differs {
				w.changed[f.path] = f.data
			}
		}
	}
	return w.changed
}

// Files lists the changed files, sorted.
func (w *Workspace) Files() []string {
	var out []string
	for i := range w.files {
		if w.files[i].differs {
			out = append(out, w.files[i].path)
		}
	}
	slices.Sort(out)
	return out
}

// Hash identifies the state: "" for the task's start, else a hash of the
// changed files' paths and contents.
func (w *Workspace) Hash() string {
	if w.hash == "" {
		files := w.Files()
		if len(files) == 0 {
			return ""
		}
		h := sha256.New()
		for _, f := range files {
			data, _ := w.current(f)
			h.Write([]byte(f))
			h.Write([]byte{0})
			h.Write(data)
			h.Write([]byte{0})
		}
		w.hash = hex.EncodeToString(h.Sum(nil))[:24]
	}
	return w.hash
}

// record notes that file now holds data, having held was (nil: absent)
// before this write.
func (w *Workspace) record(file string, was, data []byte) {
	w.hash, w.changed = "", nil
	f := w.file(file)
	if f == nil {
		w.files = append(w.files, wsFile{path: file, orig: was})
		f = &w.files[len(w.files)-1]
	}
	f.data = data
	f.differs = f.orig == nil || string(f.orig) != string(data)
}

// reverted notes that every file is back as it was at the start.
func (w *Workspace) reverted() {
	w.hash, w.changed = "", nil
	for i := range w.files {
		w.files[i].data, w.files[i].differs = w.files[i].orig, false
	}
}

// Workspaces lays out tasks' workspaces for sandbox providers: the module
// at its version with the task's bug applied, prepared once per task and
// machine and reused by every episode of the task. It is safe for
// concurrent use; Template blocks while it prepares and honours ctx.
type Workspaces interface {
	// Template returns a directory on this machine that holds task's
	// workspace as an episode starts. Nobody writes it after it is made:
	// providers copy or link it into each sandbox. A machine fault wraps
	// ErrInfra; a task that cannot be laid out (its module cannot be had,
	// its edits do not apply) is an error naming the task.
	Template(ctx context.Context, task *Task) (string, error)
}
