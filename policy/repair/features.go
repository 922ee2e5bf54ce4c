package repair

import (
	"math"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/frognano/frog/env"
)

// Kinds and Contexts are the candidate families and statement kinds the
// features tell apart; anything else counts as the last of each.
var (
	Kinds    = []string{"token", "guard", "return", "bounds", "args", "call", "stmt", "other"}
	Contexts = []string{"if", "for", "return", "assign", "expr", "switch", "decl", "other"}
	// Ops are the templates the features tell apart (Kinds groups them);
	// NewTokens the replacement texts of one-token edits: which of a line's
	// alternatives restores the code is mostly in what it writes.
	Ops       = []string{"compare-boundary", "compare-negate", "arithmetic", "incdec", "logical", "int-literal", "bool-literal", "unary-minus", "swap-args", "break-continue", "slice-bound", "restore-bound", "nil-error", "restore-err", "add-err-guard", "negate-cond", "restore-cond", "fill-body", "other"}
	NewTokens = []string{"<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "/", "&&", "||", "true", "false", "++", "--", "0", "1", "other"}
)

// Feature layout of one option (a candidate, or stopping).
const (
	fBias = iota
	fOchiai
	fTarantula
	fDStar
	fRankNorm
	fRankInv
	fTop1
	fTop5
	fEFShare
	fEPShare
	fAllFailing
	fInPackage
	fKind // len(Kinds) one-hot
)

const (
	fContext   = fKind + 8 + iota        // len(Contexts) one-hot
	fNamedLine = fContext + 8 + iota - 1 // a failing test's message or panic names the line (±2)
	fNamedFile
	fPanic
	fTimeout
	fLineTries
	fLineNoEffect
	fLineImproved
	fAlternatives
	fStep
	fTries
	fApplied
	fFailingShare
	fStop
	fOp // len(Ops) one-hot
)

const (
	fNewToken       = fOp + 19 + iota // len(NewTokens) one-hot, one-edit candidates only
	fFirstAlt       = fNewToken + 19 + iota - 1
	fSmallerLiteral // an integer literal made smaller
	fAffinity       // borrowed code: the share of its names its context uses
	fLocal          // borrowed code from the same function
	fTestName       // the share of its function's name words the failing tests' names hold
	fTestMessage    // the same of the failing tests' messages
	fFrameFunc      // its function is on a failing test's panic stack
	fNatural        // tanh of the bits the edit makes its lines more probable under the module's token model
	fNaturalBest    // the edit its line's candidates make most natural, and more natural than the line was
	fSurprise       // the line's surprise under that model, standardised over the list's lines
	// Features of a statement put back (restore-stmt), appended so that
	// the 89 before them keep their places (PrefixDim).
	fRestore       // the candidate puts a removed statement back (restore-stmt)
	fOriginFile    // its statement stands in another function of the file (local: the same function)
	fOriginPackage // its statement stands only in another file of the package
	fSimilar       // the share of the insertion point's two neighbours the statement has where it stands
	fRepeat        // the statement repeats a neighbour of the insertion point
	fPlaceStart    // it goes before a statement list's first statement
	fPlaceEnd      // it goes after a list's last statement
	fCount         // how often the package writes it: tanh(log2(count) / 3)
	// Dim is the length of every feature vector.
	Dim
)

// PrefixDim is the length of the feature vector before the restore-stmt
// features: its features are the first PrefixDim of today's, in the same
// places, so a network over them (a checkpoint from before) reads the
// first PrefixDim features of each option and weighs nothing of the rest.
// Any other length is another layout and is refused.
const PrefixDim = fRestore

// Readable reports whether a network over f features can read today's
// feature vectors (their first f): f is Dim or PrefixDim.
func Readable(f int) bool { return f == Dim || f == PrefixDim }

// FeatureNames name the features, for reports and debugging.
var FeatureNames = func() []string {
	n := make([]string, Dim)
	for i, s := range []string{"bias", "ochiai", "tarantula", "dstar", "rank_norm", "rank_inv", "top1", "top5", "ef_share", "ep_share", "all_failing", "in_package"} {
		n[i] = s
	}
	for i, k := range Kinds {
		n[fKind+i] = "kind_" + k
	}
	for i, c := range Contexts {
		n[fContext+i] = "ctx_" + c
	}
	for i, s := range []string{"named_line", "named_file", "panic", "timeout", "line_tries", "line_no_effect", "line_improved", "alternatives", "step", "tries", "applied", "failing_share", "stop"} {
		n[fNamedLine+i] = s
	}
	for i, o := range Ops {
		n[fOp+i] = "op_" + o
	}
	for i, t := range NewTokens {
		n[fNewToken+i] = "new_" + t
	}
	n[fFirstAlt], n[fSmallerLiteral], n[fAffinity], n[fLocal], n[fTestName] = "first_alternative", "smaller_literal", "affinity", "local", "test_name"
	n[fTestMessage], n[fFrameFunc] = "test_message", "frame_func"
	n[fNatural], n[fNaturalBest], n[fSurprise] = "natural", "natural_best", "surprise"
	for i, s := range []string{"restore_stmt", "origin_file", "origin_package", "similar", "repeat", "place_start", "place_end", "count"} {
		n[fRestore+i] = s
	}
	return n
}()

// Featurizer computes options' features for one state.
type Featurizer struct {
	st       *State
	suspects map[env.Line]Suspect
	n        int
	perLine  map[env.Line]int
	first    map[env.Line]int // the first candidate's ID at each line
	improved map[env.Line]int
	named    []env.Line // where failures point
	files    map[string]bool
	panic    bool
	timeout  bool
	// words and msgWords are the words of the failing tests' names and
	// messages; funcWords caches each function's share of them.
	words, msgWords map[string]bool
	funcWords       map[string][2]float32
	// frameFuncs are the functions of the failing tests' panic stacks, as
	// candidates name them ("Type.Method" or "Func").
	frameFuncs map[string]bool
	// bestNatural is each line's highest Natural; surpriseMean and
	// surpriseSD describe the list's lines' surprise.
	bestNatural              map[env.Line]float64
	surpriseMean, surpriseSD float64
}

// NewFeaturizer prepares the features of st's options.
func NewFeaturizer(st *State) *Featurizer {
	f := &Featurizer{st: st, suspects: map[env.Line]Suspect{}, perLine: map[env.Line]int{}, first: map[env.Line]int{}, improved: map[env.Line]int{}, files: map[string]bool{},
		words: map[string]bool{}, msgWords: map[string]bool{}, funcWords: map[string][2]float32{}, frameFuncs: map[string]bool{}}
	for _, t := range st.Failing0 {
		for _, w := range Words(t) {
			f.words[w] = true
		}
	}
	sus := st.Suspects
	for _, s := range sus {
		f.suspects[s.Line] = s
	}
	f.n = len(sus)
	f.bestNatural = map[env.Line]float64{}
	var sum, sum2 float64
	for _, c := range st.List {
		l := env.Line{File: c.File, Line: c.Line}
		if f.perLine[l] == 0 {
			f.first[l] = c.ID
			f.bestNatural[l] = c.Natural
			sum += c.Surprise
			sum2 += c.Surprise * c.Surprise
		}
		f.bestNatural[l] = max(f.bestNatural[l], c.Natural)
		f.perLine[l]++
	}
	if n := float64(len(f.first)); n > 0 {
		f.surpriseMean = sum / n
		f.surpriseSD = math.Sqrt(max(sum2/n-f.surpriseMean*f.surpriseMean, 0))
	}
	for id, tr := range st.Tried {
		if id < len(st.List) && Improves(&tr) {
			c := st.List[id]
			f.improved[env.Line{File: c.File, Line: c.Line}]++
		}
	}
	if st.Initial != nil {
		for _, t := range st.Initial.Tests {
			if t.Status == env.TestPass || t.Status == env.TestSkip {
				continue
			}
			f.panic = f.panic || t.Status == env.TestPanic
			f.timeout = f.timeout || t.Status == env.TestTimeout
			if t.File != "" {
				f.named = append(f.named, env.Line{File: t.File, Line: t.Line})
				f.files[t.File] = true
			}
			for _, fr := range t.Frames {
				f.named = append(f.named, env.Line{File: fr.File, Line: fr.Line})
				f.files[fr.File] = true
				f.frameFuncs[FrameFunc(fr.Func)] = true
			}
			for _, w := range Words(t.Message) {
				f.msgWords[w] = true
			}
		}
	}
	return f
}

// Candidate returns the features of trying c.
func (f *Featurizer) Candidate(c *env.Candidate) []float32 {
	x := make([]float32, Dim)
	f.episode(x)
	l := env.Line{File: c.File, Line: c.Line}
	if s, ok := f.suspects[l]; ok {
		x[fOchiai] = float32(s.Ochiai)
		x[fTarantula] = float32(s.Tarantula)
		d := s.DStar
		if d > 1e9 {
			x[fDStar] = 1
		} else {
			x[fDStar] = float32(d / (1 + d))
		}
		if f.n > 1 {
			x[fRankNorm] = float32(s.Rank-1) / float32(f.n-1)
		}
		x[fRankInv] = 1 / float32(s.Rank)
		x[fTop1] = b2f(s.Rank == 1)
		x[fTop5] = b2f(s.Rank <= 5)
		if s.F > 0 {
			x[fEFShare] = float32(s.EF) / float32(s.F)
			x[fAllFailing] = b2f(s.EF == s.F)
		}
		if s.P > 0 {
			x[fEPShare] = float32(s.EP) / float32(s.P)
		}
	} else {
		x[fRankNorm] = 1
	}
	x[fInPackage] = b2f(path.Dir(c.File) == path.Clean(f.st.Task.Dir))
	x[fKind+index(Kinds, c.Kind)] = 1
	x[fContext+index(Contexts, c.Context)] = 1
	for _, n := range f.named {
		if n.File == c.File && abs(n.Line-c.Line) <= 2 {
			x[fNamedLine] = 1
		}
	}
	x[fNamedFile] = b2f(f.files[c.File])
	x[fLineTries] = clip(float32(f.st.LineTries[l]) / 3)
	x[fLineNoEffect] = clip(float32(f.st.LineNoEffect[l]) / 3)
	x[fLineImproved] = clip(float32(f.improved[l]))
	if n := f.perLine[l]; n > 0 {
		x[fAlternatives] = 1 / float32(n)
		x[fFirstAlt] = b2f(f.first[l] == c.ID)
	}
	x[fOp+index(Ops, c.Op)] = 1
	tw := f.testWords(c.Func)
	x[fTestName], x[fTestMessage] = tw[0], tw[1]
	x[fFrameFunc] = b2f(f.frameFuncs[c.Func])
	x[fAffinity] = float32(c.Affinity)
	x[fLocal] = b2f(c.Local)
	x[fNatural] = float32(math.Tanh(c.Natural / 4))
	x[fNaturalBest] = b2f(c.Natural > 0 && c.Natural >= f.bestNatural[l])
	if f.surpriseSD > 0 {
		x[fSurprise] = float32(math.Tanh((c.Surprise - f.surpriseMean) / f.surpriseSD))
	}
	if c.Op == "restore-stmt" {
		x[fRestore] = 1
		x[fOriginFile] = b2f(c.Origin == "file")
		x[fOriginPackage] = b2f(c.Origin == "package")
		x[fSimilar] = float32(c.Similar)
		x[fRepeat] = b2f(c.Repeat)
		x[fPlaceStart] = b2f(c.Place == "start")
		x[fPlaceEnd] = b2f(c.Place == "end")
		if c.Count > 0 {
			x[fCount] = float32(math.Tanh(math.Log2(float64(c.Count)) / 3))
		}
	}
	if len(c.Edits) == 1 {
		e := c.Edits[0]
		x[fNewToken+index(NewTokens, strings.TrimSpace(e.New))] = 1
		if c.Op == "int-literal" {
			o, err1 := strconv.ParseInt(strings.ReplaceAll(e.Old, "_", ""), 0, 64)
			n, err2 := strconv.ParseInt(strings.ReplaceAll(e.New, "_", ""), 0, 64)
			x[fSmallerLiteral] = b2f(err1 == nil && err2 == nil && n < o)
		}
	}
	return x
}

// testWords is the share of the words of function fn's name (receiver
// type and name) that the failing tests' names hold, and the share their
// messages hold: tests and their messages often name what they test.
func (f *Featurizer) testWords(fn string) [2]float32 {
	if v, ok := f.funcWords[fn]; ok {
		return v
	}
	ws := Words(fn)
	var v [2]float32
	for _, w := range ws {
		v[0] += b2f(f.words[w])
		v[1] += b2f(f.msgWords[w])
	}
	if len(ws) > 0 {
		v[0] /= float32(len(ws))
		v[1] /= float32(len(ws))
	}
	f.funcWords[fn] = v
	return v
}

// FrameFunc names a stack frame's function as candidates name theirs:
// "github.com/a/b.(*Tree).Insert.func1" is "Tree.Insert" (a closure's
// frame counts as its function's; so do a generic type's).
func FrameFunc(fn string) string {
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		fn = fn[i+1:]
	}
	if i := strings.Index(fn, "."); i >= 0 {
		fn = fn[i+1:] // the package
	}
	fn = strings.NewReplacer("(*", "", "(", "", ")", "", "[...]", "").Replace(fn)
	parts := strings.Split(fn, ".")
	for len(parts) > 1 {
		last := strings.TrimPrefix(parts[len(parts)-1], "func")
		if last == "" || strings.TrimLeft(last, "0123456789") != "" {
			break
		}
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, ".")
}

// Words splits an identifier or a test's name into its lower-case words
// of two letters or more ("TestParseURL/empty" holds parse, url and
// empty; a Test, Fuzz, Benchmark or Example prefix is left out; so are
// digits).
func Words(name string) []string {
	var out []string
	for i, part := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if i == 0 {
			for _, p := range []string{"Test", "Fuzz", "Benchmark", "Example"} {
				if strings.HasPrefix(part, p) {
					part = part[len(p):]
					break
				}
			}
		}
		rs := []rune(part)
		start := 0
		flush := func(end int) {
			if w := strings.ToLower(string(rs[start:end])); len(w) >= 2 {
				out = append(out, w)
			}
			start = end
		}
		for j := 1; j < len(rs); j++ {
			switch {
			case digit(rs[j]) != digit(rs[j-1]):
				if digit(rs[j-1]) {
					start = j // drop the digits
				} else {
					flush(j)
				}
			case upper(rs[j]) && lower(rs[j-1]):
				flush(j)
			case upper(rs[j-1]) && upper(rs[j]) && j+1 < len(rs) && lower(rs[j+1]):
				flush(j)
			}
		}
		if start < len(rs) && !digit(rs[len(rs)-1]) {
			flush(len(rs))
		}
	}
	return out
}

// The ASCII classes Words splits camel case by.
func lower(r rune) bool { return r >= 'a' && r <= 'z' }
func upper(r rune) bool { return r >= 'A' && r <= 'Z' }
func digit(r rune) bool { return r >= '0' && r <= '9' }

// Stop returns the features of stopping now (submitting).
func (f *Featurizer) Stop() []float32 {
	x := make([]float32, Dim)
	f.episode(x)
	x[fStop] = 1
	return x
}

// episode fills the features every option of the state shares.
func (f *Featurizer) episode(x []float32) {
	st := f.st
	x[fBias] = 1
	x[fPanic] = b2f(f.panic)
	x[fTimeout] = b2f(f.timeout)
	if st.MaxSteps > 0 {
		x[fStep] = float32(st.Step) / float32(st.MaxSteps)
	}
	x[fTries] = clip(float32(st.Tries) / 20)
	x[fApplied] = clip(float32(st.Applied) / 3)
	if n := len(st.Failing0); n > 0 {
		x[fFailingShare] = float32(len(st.Failing)) / float32(n)
	}
}

// Decision packs the features of options (rows of one length: Dim, or
// the first PrefixDim of each for a network over those) and the choice.
func Decision(kind string, rows [][]float32, chosen int, temperature float64) *env.Decision {
	dim := Dim
	if len(rows) > 0 {
		dim = len(rows[0])
	}
	d := &env.Decision{Kind: kind, Dim: dim, Chosen: chosen, Temperature: temperature, Features: make([]float32, 0, len(rows)*dim)}
	for _, r := range rows {
		d.Features = append(d.Features, r...)
	}
	return d
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

func clip(v float32) float32 { return float32(math.Min(float64(v), 1)) }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list) - 1
}
