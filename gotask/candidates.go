package gotask

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask/gotest"
	"github.com/frognano/frog/synth/mutate"
)

// Candidates lists the repair templates of synth/mutate at lines, in the
// files as the workspace holds them. Lines outside Go files of the task's
// module are ignored.
func (h *Harness) Candidates(ctx context.Context, sb env.Sandbox, ws *env.Workspace, lines []env.Line) ([]env.Candidate, error) {
	t := ws.Task
	var lkey strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&lkey, "%s:%d,", l.File, l.Line)
	}
	list, _, err := cached(h, okey("cand", t.ID, ws.Hash(), lkey.String()), func() ([]env.Candidate, int, error) {
		saved := h.savedCandidates(ctx, ws, lkey.String())
		if saved != "" {
			var out []env.Candidate
			if data, err := os.ReadFile(saved); err == nil && json.Unmarshal(data, &out) == nil {
				h.st.candSaved.Add(1)
				return out, 0, nil
			}
		}
		out, err := h.candidates(ctx, ws, lines)
		if err == nil && saved != "" {
			if data, err := json.Marshal(out); err == nil {
				writeShared(h.cfg.BinCache, saved, data, 0o444)
			}
		}
		return out, 0, err
	})
	return list, err
}

// savedCandidates is the file of the binary cache that keeps the candidate
// list at lines (lkey) of ws's task as it starts, made by this very frog
// executable (the templates and their features are its code): a later run
// on the same store reads it instead of parsing and type-checking the
// package again (a tenth of a second a task, about half of frog's own CPU
// time in a later run). "" where ws is not the starting state, the outcome
// cache is off, or there is no binary cache.
func (h *Harness) savedCandidates(ctx context.Context, ws *env.Workspace, lkey string) string {
	t := ws.Task
	if h.cfg.BinCache == "" || h.cfg.NoCache || ws.Hash() != "" {
		return ""
	}
	self := executableHash()
	tk, ok := h.templateKey(ctx, t)
	if self == "" || !ok {
		return ""
	}
	// The restore-stmt cap makes another list of the same lines.
	restore := fmt.Sprint("restore-stmt=", h.cfg.RestoreList)
	return filepath.Join(h.cfg.BinCache, key("cand", t.ID, tk, t.Repo+"@"+t.Version, lkey, restore, self)+".cand.json")
}

// executableHash is the hash of the running executable's file, "" when it
// cannot be read.
var executableHash = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return ""
	}
	return hex.EncodeToString(d.Sum(nil))[:32]
})

// candidates computes the candidate list of Candidates.
func (h *Harness) candidates(ctx context.Context, ws *env.Workspace, lines []env.Line) ([]env.Candidate, error) {
	t := ws.Task
	tmpl, err := h.ws.Template(ctx, t)
	if err != nil {
		return nil, env.Infra(err)
	}
	byFile := map[string][]int{}
	var order []string
	for _, l := range lines {
		f := path.Clean(l.File)
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || !filepath.IsLocal(f) {
			continue
		}
		if _, ok := byFile[f]; !ok {
			order = append(order, f)
		}
		byFile[f] = append(byFile[f], l.Line)
	}
	// Candidates come in the order of lines: gather per line first.
	perLine := map[env.Line][]env.Candidate{}
	lm := h.models.get(t.ID, tmpl)
	for _, f := range order {
		pkg, err := loadPackage(tmpl, ws, path.Dir(f))
		if err != nil {
			return nil, err
		}
		sf := pkg.Files[f]
		if sf == nil {
			continue
		}
		surprise := map[int]float64{}
		var restore *mutate.Restoring
		if h.cfg.RestoreList > 0 {
			restore = new(mutate.Restoring)
			for _, n := range slices.Sorted(maps.Keys(pkg.Files)) {
				if n != f {
					restore.Peers = append(restore.Peers, mutate.Peer{File: pkg.Files[n].AST, Src: pkg.Files[n].Src})
				}
			}
		}
		for _, r := range mutate.Repairs(pkg.Fset, sf.AST, sf.Src, pkg.info, byFile[f], restore) {
			l := env.Line{File: f, Line: firstHit(r.Line, r.EndLine, byFile[f])}
			s, ok := surprise[l.Line]
			if !ok {
				s = lm.Surprise(sf.Src, l.Line)
				surprise[l.Line] = s
			}
			c := env.Candidate{File: f, Line: l.Line, Op: r.Op, Kind: r.Kind,
				Context: r.Context, Func: r.Func, Desc: r.Desc, Edits: slices.Clone(r.Edits), Affinity: r.Affinity, Local: r.Local,
				Natural: lm.Delta(sf.Src, r.Edits), Surprise: s}
			if rs := r.Restore; rs != nil {
				c.Origin, c.Place, c.Similar, c.Repeat, c.Count = rs.Origin, rs.Place, rs.Similar, rs.Repeat, rs.Count
			}
			perLine[l] = append(perLine[l], c)
		}
	}
	// The restore-stmt candidates, the most suspicious lines' first up to
	// the cap, come after every other candidate: a policy that tries the
	// list in order (fl-greedy) tries the inverse templates as it would
	// without them, and the borrowed statements, the widest guesses, last.
	var out, restores []env.Candidate
	seen := map[env.Line]bool{}
	for _, l := range lines {
		l.File = path.Clean(l.File)
		if seen[l] {
			continue
		}
		seen[l] = true
		for _, c := range perLine[l] {
			switch {
			case c.Op != mutate.OpRestoreStmt:
				out = append(out, c)
			case len(restores) < h.cfg.RestoreList:
				restores = append(restores, c)
			}
		}
	}
	out = append(out, restores...)
	for i := range out {
		out[i].ID = i
	}
	return out, nil
}

// models caches the token models (mutate.LM) of the last few tasks'
// templates: a task's candidate lists share one.
type models struct {
	mu    sync.Mutex
	order []string
	m     map[string]*modelEntry
}

type modelEntry struct {
	once sync.Once
	lm   *mutate.LM
}

// maxModels bounds the models kept (one is some megabytes).
const maxModels = 8

// get is task id's model of its template tmpl's non-test Go code (the code
// as the task hands it over, bug included: never the fixed code), made on
// first use; nil if the template cannot be read.
func (ms *models) get(id, tmpl string) *mutate.LM {
	ms.mu.Lock()
	if ms.m == nil {
		ms.m = map[string]*modelEntry{}
	}
	e := ms.m[id]
	if e == nil {
		e = &modelEntry{}
		ms.m[id] = e
		ms.order = append(ms.order, id)
		if len(ms.order) > maxModels {
			delete(ms.m, ms.order[0])
			ms.order = ms.order[1:]
		}
	}
	ms.mu.Unlock()
	e.once.Do(func() { e.lm = moduleModel(tmpl) })
	return e.lm
}

// moduleModel counts the non-test Go files of the module at dir (vendored,
// testdata and hidden directories left out), up to 16 MB of them.
func moduleModel(dir string) *mutate.LM {
	var srcs [][]byte
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := d.Name()
		if d.IsDir() {
			if p != dir && (n == "vendor" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || total > 16<<20 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += len(data)
		srcs = append(srcs, data)
		return nil
	})
	if err != nil {
		return nil
	}
	return mutate.NewLM(srcs)
}

func firstHit(lo, hi int, lines []int) int {
	for _, l := range lines {
		if lo <= l && l <= hi {
			return l
		}
	}
	return lo
}

// typedPackage is one package of a workspace, parsed and (best effort)
// type-checked.
type typedPackage struct {
	*gotest.Package
	info *types.Info
}

// loadPackage parses the non-test Go files of directory dir (module
// relative) as the workspace holds them: the task's template with the
// episode's changes laid over.
func loadPackage(tmpl string, ws *env.Workspace, dir string) (*typedPackage, error) {
	files := map[string][]byte{}
	entries, err := os.ReadDir(filepath.Join(tmpl, filepath.FromSlash(dir)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, env.Infra(err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tmpl, filepath.FromSlash(dir), n))
		if err != nil {
			return nil, env.Infra(err)
		}
		files[path.Join(dir, n)] = data
	}
	for f, data := range ws.Changed() {
		if path.Dir(f) == dir && strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
			files[f] = data
		}
	}
	ps, err := parseSources(dir, files)
	if err != nil {
		return nil, err
	}
	var asts []*ast.File
	for _, n := range slices.Sorted(maps.Keys(ps.Files)) {
		asts = append(asts, ps.Files[n].AST)
	}
	info, _ := mutate.Check(ps.Fset, dir, asts, importer.Default())
	return &typedPackage{Package: ps, info: info}, nil
}

// parseSources parses a package's non-test files from memory (paths module
// relative, all in dir); a file that does not parse is the agent's mistake.
func parseSources(dir string, files map[string][]byte) (*gotest.Package, error) {
	ps := &gotest.Package{Dir: strings.TrimPrefix(path.Clean(dir), "./"), Fset: token.NewFileSet(), Files: map[string]*gotest.File{}}
	if ps.Dir == "" {
		ps.Dir = "."
	}
	for _, r := range slices.Sorted(maps.Keys(files)) {
		src := files[r]
		f, err := parser.ParseFile(ps.Fset, r, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("%s does not parse: %v", r, err)
		}
		if ps.Name == "" || ps.Name == "main" {
			ps.Name = f.Name.Name
		}
		ps.Files[r] = &gotest.File{Src: src, AST: f, Tok: ps.Fset.File(f.Pos()), Uses: gotest.ImportUses(f)}
		ps.Lines += strings.Count(string(src), "\n")
	}
	if len(ps.Files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return ps, nil
}

func candKey(c env.Candidate) string {
	data, _ := json.Marshal(struct {
		F string
		E []env.Edit
	}{c.File, c.Edits})
	return string(data)
}
