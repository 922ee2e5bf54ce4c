package mutate

import (
	"go/scanner"
	"go/token"
	"math"
	"sync"

	"github.com/frognano/frog/env"
)

// LM is a token trigram model of a module's code: how natural a line is
// in the code around it. Injected bugs make code less natural (a `<=`
// where the module writes `<`, `err == nil` where it checks `!= nil`) and
// their repairs make it more so ("On the naturalness of buggy code", Ray et
// al., ICSE 2016); so an edit's gain in log-probability is a repair
// feature, and a line's surprise a localisation one. Every score leaves
// out the scored lines' own n-grams (leave one out): the code being judged
// does not vouch for itself.
type LM struct {
	mu    sync.Mutex // scores take their own lines out of the counts
	vocab map[string]uint32
	// c1, c2, c3 count unigrams, bigrams and trigrams of token IDs; h1 and
	// h2 count the contexts (a token or a pair followed by anything).
	c1     map[uint32]int
	c2, h1 map[uint64]int
	c3, h2 map[[3]uint32]int
	n      int
}

// Interpolation weights of the trigram, bigram and unigram estimates.
const lm3, lm2, lm1 = 0.6, 0.3, 0.1

// NewLM counts the tokens of srcs (Go source files; one that does not scan
// counts as far as it does).
func NewLM(srcs [][]byte) *LM {
	lm := &LM{vocab: map[string]uint32{}, c1: map[uint32]int{}, c2: map[uint64]int{}, h1: map[uint64]int{},
		c3: map[[3]uint32]int{}, h2: map[[3]uint32]int{}}
	for _, src := range srcs {
		ids := lm.ids(tokens(src, 0, len(src)), true)
		lm.count(ids, 1, 0)
	}
	return lm
}

// tok is a normalised token and where it starts.
type tok struct {
	s   string
	off int
}

// tokens are src[lo:hi]'s tokens, normalised: identifiers and short
// numbers as written, longer numbers, strings and characters as a class,
// the semicolons Go inserts at line ends as one line-end token.
func tokens(src []byte, lo, hi int) []tok {
	var s scanner.Scanner
	fs := token.NewFileSet()
	f := fs.AddFile("", -1, hi-lo)
	s.Init(f, src[lo:hi], func(token.Position, string) {}, 0)
	var out []tok
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			return out
		}
		var v string
		switch {
		case t == token.IDENT:
			v = lit
		case t == token.INT || t == token.FLOAT || t == token.IMAG:
			v = lit
			if len(lit) > 2 {
				v = "<num>"
			}
		case t == token.STRING || t == token.CHAR:
			v = "<str>"
		case t == token.SEMICOLON && lit == "\n":
			v = "<nl>"
		default:
			v = t.String()
		}
		out = append(out, tok{s: v, off: lo + f.Offset(pos)})
	}
}

// ids maps tokens to IDs; a token the model never saw is ID 0 unless add.
func (lm *LM) ids(ts []tok, add bool) []uint32 {
	out := make([]uint32, len(ts))
	for i, t := range ts {
		id, ok := lm.vocab[t.s]
		if !ok && add {
			id = uint32(len(lm.vocab) + 1)
			lm.vocab[t.s] = id
		}
		out[i] = id
	}
	return out
}

func pair(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

// count adds sign times the n-grams of ids ending at index from on.
func (lm *LM) count(ids []uint32, sign, from int) {
	for i := from; i < len(ids); i++ {
		lm.c1[ids[i]] += sign
		lm.n += sign
		if i >= 1 {
			lm.c2[pair(ids[i-1], ids[i])] += sign
			lm.h1[uint64(ids[i-1])] += sign
		}
		if i >= 2 {
			lm.c3[[3]uint32{ids[i-2], ids[i-1], ids[i]}] += sign
			lm.h2[[3]uint32{ids[i-2], ids[i-1]}] += sign
		}
	}
}

// logProb is the sum of log2 probabilities of ids[from:], each given the
// two before it.
func (lm *LM) logProb(ids []uint32, from int) float64 {
	v := float64(len(lm.vocab) + 1)
	var sum float64
	for i := from; i < len(ids); i++ {
		w := ids[i]
		p1 := (float64(max(lm.c1[w], 0)) + 0.5) / (float64(lm.n) + 0.5*v)
		p, rest := lm1*p1, lm2+lm3
		if i >= 1 {
			if h := lm.h1[uint64(ids[i-1])]; h > 0 && ids[i-1] != 0 {
				p += lm2 * float64(min(max(lm.c2[pair(ids[i-1], w)], 0), h)) / float64(h)
				rest -= lm2
			}
		}
		if i >= 2 {
			if h := lm.h2[[3]uint32{ids[i-2], ids[i-1]}]; h > 0 && ids[i-2] != 0 && ids[i-1] != 0 {
				p += lm3 * float64(min(max(lm.c3[[3]uint32{ids[i-2], ids[i-1], w}], 0), h)) / float64(h)
				rest -= lm3
			}
		}
		// The weight of missing contexts goes to the unigram estimate.
		p += rest * p1
		sum += math.Log2(p)
	}
	return sum
}

// lineSpan is the byte range of the whole lines of src holding [lo, hi).
func lineSpan(src []byte, lo, hi int) (int, int) {
	for lo > 0 && src[lo-1] != '\n' {
		lo--
	}
	for hi < len(src) && src[hi] != '\n' {
		hi++
	}
	if hi < len(src) {
		hi++ // the newline: its line-end token
	}
	return lo, hi
}

// region tokenises src's lines [lo, hi) with the two tokens before them as
// context; scored says where the region's own tokens start.
func (lm *LM) region(src []byte, lo, hi int) (ids []uint32, scored int) {
	clo, _ := lineSpan(src, max(lo-1, 0), max(lo-1, 0))
	ts := tokens(src, clo, hi)
	for scored < len(ts) && ts[scored].off < lo {
		scored++
	}
	start := max(scored-2, 0)
	return lm.ids(ts[start:], false), scored - start
}

// Delta is how many bits more probable edits make the lines of src they
// touch, the model left without those lines' n-grams: positive when the
// edited code reads more like the rest of the module. Edits that do not
// apply score 0.
func (lm *LM) Delta(src []byte, edits []Edit) float64 {
	if lm == nil || len(edits) == 0 {
		return 0
	}
	b, err := env.Splice(src, edits)
	if err != nil {
		return 0
	}
	lo, hi := len(src), 0
	for _, e := range edits {
		lo, hi = min(lo, e.Offset), max(hi, e.Offset+len(e.Old))
	}
	lo, hi = lineSpan(src, lo, hi)
	// The edited lines are the same lines of b, shifted by what the edits
	// added or took away.
	nhi := hi + len(b) - len(src)
	lm.mu.Lock()
	defer lm.mu.Unlock()
	before, bs := lm.region(src, lo, hi)
	after, as := lm.region(b, lo, nhi)
	lm.count(before, -1, bs)
	defer lm.count(before, 1, bs)
	return lm.logProb(after, as) - lm.logProb(before, bs)
}

// Surprise is the mean surprise, in bits a token, of line (1-based) of
// src, the model left without that line's n-grams; 0 for an empty line.
func (lm *LM) Surprise(src []byte, line int) float64 {
	if lm == nil || line < 1 {
		return 0
	}
	off, l := 0, 1
	for l < line && off < len(src) {
		if src[off] == '\n' {
			l++
		}
		off++
	}
	if l != line || off >= len(src) {
		return 0
	}
	lo, hi := lineSpan(src, off, off)
	lm.mu.Lock()
	defer lm.mu.Unlock()
	ids, s := lm.region(src, lo, hi)
	if len(ids) <= s {
		return 0
	}
	lm.count(ids, -1, s)
	defer lm.count(ids, 1, s)
	return -lm.logProb(ids, s) / float64(len(ids)-s)
}
