package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// runDiff is diff: diff [-u | -U N | -c?] [-q] [-r] [-N] [-a] FROM TO. It
// writes the normal format, or the unified one with -u. Exit 0 when the
// inputs are the same, 1 when they differ, 2 on trouble.
func runDiff(p *proc, name string, args []string) int {
	opts, ops, err := getopt(args, "uU:qrNawB", []string{"unified=", "brief", "recursive", "new-file", "text", "ignore-all-space", "ignore-blank-lines", "label="}, true)
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	d := differ{p: p, ctx: -1}
	for _, o := range opts {
		switch o.name {
		case "u":
			d.ctx = 3
		case "U", "unified":
			n, err := strconv.Atoi(o.val)
			if err != nil || n < 0 {
				return p.fail(2, name, "invalid context length %q", o.val)
			}
			d.ctx = n
		case "q", "brief":
			d.brief = true
		case "r", "recursive":
			d.recursive = true
		case "N", "new-file":
			d.newFile = true
		case "w", "ignore-all-space":
			d.noSpace = true
		case "label":
			d.labels = append(d.labels, o.val)
		}
	}
	if len(ops) != 2 {
		return p.fail(2, name, "usage: diff [OPTION]... FROM TO")
	}
	differ, err := d.paths(ops[0], ops[1])
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	return status(!differ)
}

type differ struct {
	p                                  *proc
	ctx                                int // -1: normal format
	brief, recursive, newFile, noSpace bool
	labels                             []string
}

func (d *differ) paths(a, b string) (bool, error) {
	fa, errA := os.Stat(d.p.path(a))
	fb, errB := os.Stat(d.p.path(b))
	if errA != nil && !(d.newFile && os.IsNotExist(errA) && errB == nil) {
		if a != "-" {
			return false, errA
		}
	}
	if errB != nil && !(d.newFile && os.IsNotExist(errB) && errA == nil) {
		if b != "-" {
			return false, errB
		}
	}
	switch {
	case fa != nil && fa.IsDir() && fb != nil && fb.IsDir():
		return d.dirs(a, b)
	case fa != nil && fa.IsDir():
		a = filepath.Join(a, filepath.Base(b))
	case fb != nil && fb.IsDir():
		b = filepath.Join(b, filepath.Base(a))
	}
	return d.files(a, b)
}

func (d *differ) dirs(a, b string) (bool, error) {
	names := map[string]bool{}
	for _, dir := range []string{a, b} {
		ents, err := os.ReadDir(d.p.path(dir))
		if err != nil {
			return false, err
		}
		for _, e := range ents {
			names[e.Name()] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	differ := false
	for _, n := range sorted {
		pa, pb := filepath.Join(a, n), filepath.Join(b, n)
		fa, errA := os.Stat(d.p.path(pa))
		fb, errB := os.Stat(d.p.path(pb))
		switch {
		case errA != nil && !d.newFile:
			fmt.Fprintf(d.p.stdout, "Only in %s: %s\n", b, n)
			differ = true
		case errB != nil && !d.newFile:
			fmt.Fprintf(d.p.stdout, "Only in %s: %s\n", a, n)
			differ = true
		case errA == nil && errB == nil && fa.IsDir() && fb.IsDir():
			if !d.recursive {
				fmt.Fprintf(d.p.stdout, "Common subdirectories: %s and %s\n", pa, pb)
				continue
			}
			dd, err := d.dirs(pa, pb)
			if err != nil {
				return false, err
			}
			differ = differ || dd
		default:
			if d.ctx < 0 && !d.brief {
				fmt.Fprintf(d.p.stdout, "diff %s %s\n", pa, pb)
			}
			df, err := d.files(pa, pb)
			if err != nil {
				return false, err
			}
			differ = differ || df
		}
	}
	return differ, nil
}

func (d *differ) read(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(d.p.stdin)
	}
	data, err := os.ReadFile(d.p.path(name))
	if os.IsNotExist(err) && d.newFile {
		return nil, nil
	}
	return data, err
}

func (d *differ) files(a, b string) (bool, error) {
	da, err := d.read(a)
	if err != nil {
		return false, err
	}
	db, err := d.read(b)
	if err != nil {
		return false, err
	}
	if bytes.Equal(da, db) {
		return false, nil
	}
	la, lb := splitLines(da), splitLines(db)
	key := func(s string) string { return s }
	if d.noSpace {
		key = func(s string) string { return strings.Join(strings.Fields(s), "") }
	}
	edits := diffLines(la, lb, key)
	if len(edits) == 0 {
		return false, nil
	}
	if d.brief {
		fmt.Fprintf(d.p.stdout, "Files %s and %s differ\n", a, b)
		return true, nil
	}
	if bytes.IndexByte(da, 0) >= 0 || bytes.IndexByte(db, 0) >= 0 {
		fmt.Fprintf(d.p.stdout, "Binary files %s and %s differ\n", a, b)
		return true, nil
	}
	if d.ctx < 0 {
		writeNormal(d.p.stdout, la, lb, edits)
	} else {
		labA, labB := a, b
		if len(d.labels) > 0 {
			labA = d.labels[0]
		}
		if len(d.labels) > 1 {
			labB = d.labels[1]
		}
		fmt.Fprintf(d.p.stdout, "--- %s\n+++ %s\n", labA, labB)
		writeUnified(d.p.stdout, la, lb, edits, d.ctx)
	}
	return true, nil
}

// line is one line of a file and whether it ended with a newline.
type line struct {
	text string
	nl   bool
}

func splitLines(data []byte) []line {
	var ls []line
	for s := string(data); s != ""; {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			ls = append(ls, line{s, false})
			break
		}
		ls = append(ls, line{s[:i], true})
		s = s[i+1:]
	}
	return ls
}

// edit is a change: lines a[a0:a1] replaced by b[b0:b1].
type edit struct{ a0, a1, b0, b1 int }

// maxEditDistance bounds the work of diffLines; past it the rest of the
// inputs is one change.
const maxEditDistance = 4000

// diffLines returns the changes from a to b (Myers' algorithm on the lines'
// keys), in order.
func diffLines(a, b []line, key func(string) string) []edit {
	ka, kb := keys(a, key), keys(b, key)
	n, m := len(ka), len(kb)
	// Common prefix and suffix need no search.
	pre := 0
	for pre < n && pre < m && ka[pre] == kb[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && ka[n-1-suf] == kb[m-1-suf] {
		suf++
	}
	ka, kb = ka[pre:n-suf], kb[pre:m-suf]
	var edits []edit
	for _, e := range myers(ka, kb) {
		edits = append(edits, edit{e.a0 + pre, e.a1 + pre, e.b0 + pre, e.b1 + pre})
	}
	return edits
}

func keys(ls []line, key func(string) string) []string {
	k := make([]string, len(ls))
	for i, l := range ls {
		k[i] = key(l.text)
		if !l.nl {
			k[i] += "\x00" // a last line without a newline differs from one with
		}
	}
	return k
}

func myers(a, b []string) []edit {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil
	}
	if n == 0 || m == 0 {
		return []edit{{0, n, 0, m}}
	}
	off := n + m
	v := make([]int, 2*(n+m)+2)
	var trace [][]int // trace[d] is v[off-d : off+d+1] before round d
	end := -1
	for d := 0; d <= n+m && d <= maxEditDistance; d++ {
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				end = d
				break
			}
		}
		if end >= 0 {
			break
		}
	}
	if end < 0 {
		return []edit{{0, n, 0, m}}
	}
	// Walk back from (n, m): each round is a snake preceded by one
	// deletion (x-1) or insertion (y-1).
	var ops []byte // from the end: '=' both, '-' a only, '+' b only
	x, y := n, m
	for d := end; d > 0; d-- {
		prev := trace[d]
		at := func(k int) int { return prev[k+d] } // prev is v[off-d : off+d+1]
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			ops = append(ops, '=')
			x--
			y--
		}
		if pk == k+1 {
			ops = append(ops, '+')
			y--
		} else {
			ops = append(ops, '-')
			x--
		}
	}
	for x > 0 && y > 0 {
		ops = append(ops, '=')
		x--
		y--
	}
	var edits []edit
	ai, bi := 0, 0
	for i := len(ops) - 1; i >= 0; {
		if ops[i] == '=' {
			ai, bi, i = ai+1, bi+1, i-1
			continue
		}
		e := edit{a0: ai, b0: bi}
		for ; i >= 0 && ops[i] != '='; i-- {
			if ops[i] == '-' {
				ai++
			} else {
				bi++
			}
		}
		e.a1, e.b1 = ai, bi
		edits = append(edits, e)
	}
	return edits
}

func rng(a, b int) string {
	if b-a <= 1 {
		return strconv.Itoa(max(b, a))
	}
	return strconv.Itoa(a+1) + "," + strconv.Itoa(b)
}

func writeLines(w io.Writer, prefix string, ls []line) {
	for _, l := range ls {
		io.WriteString(w, prefix+l.text+"\n")
		if !l.nl {
			io.WriteString(w, "\\ No newline at end of file\n")
		}
	}
}

// writeNormal writes the edits in diff's default format.
func writeNormal(w io.Writer, a, b []line, edits []edit) {
	for _, e := range edits {
		switch {
		case e.b0 == e.b1:
			fmt.Fprintf(w, "%sd%d\n", rng(e.a0, e.a1), e.b0)
			writeLines(w, "< ", a[e.a0:e.a1])
		case e.a0 == e.a1:
			fmt.Fprintf(w, "%da%s\n", e.a0, rng(e.b0, e.b1))
			writeLines(w, "> ", b[e.b0:e.b1])
		default:
			fmt.Fprintf(w, "%sc%s\n", rng(e.a0, e.a1), rng(e.b0, e.b1))
			writeLines(w, "< ", a[e.a0:e.a1])
			io.WriteString(w, "---\n")
			writeLines(w, "> ", b[e.b0:e.b1])
		}
	}
}

// writeUnified writes the edits as unified hunks with ctx lines of context.
func writeUnified(w io.Writer, a, b []line, edits []edit, ctx int) {
	hunkRange := func(start, n int) string {
		if n == 1 {
			return strconv.Itoa(start + 1)
		}
		if n == 0 {
			return strconv.Itoa(start) + ",0"
		}
		return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
	}
	for i := 0; i < len(edits); {
		j := i
		for j+1 < len(edits) && edits[j+1].a0-edits[j].a1 <= 2*ctx {
			j++
		}
		a0, b0 := max(edits[i].a0-ctx, 0), max(edits[i].b0-ctx, 0)
		a1, b1 := min(edits[j].a1+ctx, len(a)), min(edits[j].b1+ctx, len(b))
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(a0, a1-a0), hunkRange(b0, b1-b0))
		at := a0
		for _, e := range edits[i : j+1] {
			writeLines(w, " ", a[at:e.a0])
			writeLines(w, "-", a[e.a0:e.a1])
			writeLines(w, "+", b[e.b0:e.b1])
			at = e.a1
		}
		writeLines(w, " ", a[at:a1])
		i = j + 1
	}
}
