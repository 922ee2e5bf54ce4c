package main

import (
	"bufio"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// countArg rewrites the old "-5" and "+5" forms of head and tail to -n.
func countArg(args []string) []string {
	if len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		if _, err := strconv.Atoi(args[0][1:]); err == nil {
			n := args[0][1:]
			if args[0][0] == '+' {
				n = "+" + n
			}
			return append([]string{"-n", n}, args[1:]...)
		}
	}
	return args
}

// size parses a count with dd/head-style suffixes (K, M, G; KB, MB: powers
// of ten; b: 512).
func size(s string) (int64, error) {
	mult := int64(1)
	for suf, m := range map[string]int64{"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "G": 1 << 30, "KB": 1000, "kB": 1000, "MB": 1e6, "GB": 1e9, "b": 512, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if t, ok := strings.CutSuffix(s, suf); ok && t != "" {
			if _, err := strconv.ParseInt(t, 10, 64); err == nil {
				s, mult = t, m
				break
			}
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid number %q", s)
	}
	return n * mult, nil
}

// runHead is head: head [-n [-]N] [-c [-]N] [-qv] [FILE]...
func runHead(p *proc, name string, args []string) int {
	opts, files, err := getopt(countArg(args), "n:c:qv", []string{"lines=", "bytes=", "quiet", "silent", "verbose"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	lines, bytes, all := int64(10), int64(-1), false
	headers := len(files) > 1
	for _, o := range opts {
		switch o.name {
		case "n", "lines", "c", "bytes":
			v := o.val
			if all = strings.HasPrefix(v, "-"); all {
				v = v[1:]
			}
			n, err := size(v)
			if err != nil {
				return p.fail(1, name, "%v", err)
			}
			if o.name == "n" || o.name == "lines" {
				lines, bytes = n, -1
			} else {
				bytes = n
			}
		case "q", "quiet", "silent":
			headers = false
		case "v", "verbose":
			headers = true
		}
	}
	w := bufio.NewWriter(p.stdout)
	defer w.Flush()
	first := true
	ok := p.inputs(name, files, func(file string, r io.Reader) error {
		if headers {
			if !first {
				w.WriteString("\n")
			}
			fmt.Fprintf(w, "==> %s <==\n", displayName(file))
		}
		first = false
		if bytes >= 0 {
			if all { // all but the last N bytes
				data, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				w.Write(data[:max(int64(len(data))-bytes, 0)])
				return nil
			}
			_, err := io.CopyN(w, r, bytes)
			if err == io.EOF {
				err = nil
			}
			return err
		}
		if all {
			var ls []string
			err := eachLine(r, func(l string, last bool) error { ls = append(ls, lineOut(l, last)); return nil })
			for _, l := range ls[:max(int64(len(ls))-lines, 0)] {
				w.WriteString(l)
			}
			return err
		}
		n := int64(0)
		return eachLine(r, func(l string, last bool) error {
			if n >= lines {
				return errStop
			}
			n++
			w.WriteString(lineOut(l, last))
			return nil
		})
	})
	return status(ok)
}

func lineOut(l string, last bool) string {
	if last {
		return l
	}
	return l + "\n"
}

func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// runTail is tail: tail [-n [+]N] [-c [+]N] [-qv] [FILE]...
func runTail(p *proc, name string, args []string) int {
	opts, files, err := getopt(countArg(args), "n:c:qvf", []string{"lines=", "bytes=", "quiet", "silent", "verbose", "follow"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	n, fromStart, bytes := int64(10), false, false
	headers := len(files) > 1
	for _, o := range opts {
		switch o.name {
		case "n", "lines", "c", "bytes":
			v := strings.TrimPrefix(o.val, "-")
			fromStart = strings.HasPrefix(v, "+")
			if n, err = size(strings.TrimPrefix(v, "+")); err != nil {
				return p.fail(1, name, "%v", err)
			}
			bytes = o.name == "c" || o.name == "bytes"
		case "q", "quiet", "silent":
			headers = false
		case "v", "verbose":
			headers = true
		}
	}
	w := bufio.NewWriter(p.stdout)
	defer w.Flush()
	first := true
	ok := p.inputs(name, files, func(file string, r io.Reader) error {
		if headers {
			if !first {
				w.WriteString("\n")
			}
			fmt.Fprintf(w, "==> %s <==\n", displayName(file))
		}
		first = false
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if bytes {
			if fromStart {
				w.Write(data[min(max(n-1, 0), int64(len(data))):])
			} else {
				w.Write(data[max(int64(len(data))-n, 0):])
			}
			return nil
		}
		ls := strings.SplitAfter(string(data), "\n")
		if ls[len(ls)-1] == "" {
			ls = ls[:len(ls)-1]
		}
		if fromStart {
			ls = ls[min(max(n-1, 0), int64(len(ls))):]
		} else {
			ls = ls[max(int64(len(ls))-n, 0):]
		}
		for _, l := range ls {
			w.WriteString(l)
		}
		return nil
	})
	return status(ok)
}

// runWc is wc: wc [-clmw] [FILE]...
func runWc(p *proc, name string, args []string) int {
	opts, files, err := getopt(args, "clmwL", []string{"bytes", "lines", "chars", "words"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	show := map[string]bool{}
	for _, o := range opts {
		switch o.name {
		case "c", "bytes":
			show["c"] = true
		case "l", "lines":
			show["l"] = true
		case "m", "chars":
			show["m"] = true
		case "w", "words":
			show["w"] = true
		}
	}
	if len(show) == 0 {
		show = map[string]bool{"l": true, "w": true, "c": true}
	}
	var total [4]int64
	rows := [][5]string{}
	ok := p.inputs(name, files, func(file string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		s := string(data)
		c := [4]int64{int64(strings.Count(s, "\n")), int64(len(strings.Fields(s))), int64(len([]rune(s))), int64(len(data))}
		for i := range c {
			total[i] += c[i]
		}
		f := file
		if file == "-" && len(files) == 0 {
			f = ""
		}
		rows = append(rows, row(c, f))
		return nil
	})
	if len(files) > 1 {
		rows = append(rows, row(total, "total"))
	}
	// GNU's widths: none for one number, 7 for standard input, else the
	// widest number.
	width := 1
	switch {
	case len(show) == 1 && len(rows) == 1:
	case len(files) == 0:
		width = 7
	default:
		for _, r := range rows {
			for _, v := range r[:4] {
				width = max(width, len(v))
			}
		}
	}
	for _, r := range rows {
		var cols []string
		for i, k := range []string{"l", "w", "m", "c"} {
			if show[k] {
				cols = append(cols, fmt.Sprintf("%*s", width, r[i]))
			}
		}
		if r[4] != "" {
			cols = append(cols, r[4])
		}
		fmt.Fprintln(p.stdout, strings.Join(cols, " "))
	}
	return status(ok)
}

func row(c [4]int64, name string) [5]string {
	return [5]string{strconv.FormatInt(c[0], 10), strconv.FormatInt(c[1], 10), strconv.FormatInt(c[2], 10), strconv.FormatInt(c[3], 10), name}
}

// readLines reads all lines of the inputs.
func (p *proc) readLines(name string, files []string) ([]string, bool) {
	var ls []string
	ok := p.inputs(name, files, func(_ string, r io.Reader) error {
		return eachLine(r, func(l string, _ bool) error { ls = append(ls, l); return nil })
	})
	return ls, ok
}

// sortOpts is what sort was asked for.
type sortOpts struct {
	numeric, reverse, unique, fold bool
	sep                            string // -t: the field separator ("": runs of blanks)
	out                            string // -o: the output file ("": standard output)
	k1, k2                         int    // -k: the key's first and last fields (0: none)
}

// runSort is sort: sort [-nrufb] [-t SEP] [-k F1[,F2]] [-o FILE] [FILE]...
func runSort(p *proc, name string, args []string) int {
	s, files, err := parseSort(args)
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	ls, ok := p.readLines(name, files)
	ls = s.sort(ls)
	w := p.stdout
	if s.out != "" {
		f, err := os.Create(p.path(s.out))
		if err != nil {
			return p.fail(2, name, "%v", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	for _, l := range ls {
		bw.WriteString(l + "\n")
	}
	bw.Flush()
	if !ok {
		return 2
	}
	return 0
}

// parseSort reads sort's command line into its options and its files.
func parseSort(args []string) (sortOpts, []string, error) {
	opts, files, err := getopt(args, "nrufbst:k:o:V", []string{"numeric-sort", "reverse", "unique", "ignore-case", "stable", "field-separator=", "key=", "output=", "version-sort"}, true)
	if err != nil {
		return sortOpts{}, nil, err
	}
	var s sortOpts
	for _, o := range opts {
		switch o.name {
		case "n", "numeric-sort":
			s.numeric = true
		case "r", "reverse":
			s.reverse = true
		case "u", "unique":
			s.unique = true
		case "f", "ignore-case":
			s.fold = true
		case "t", "field-separator":
			s.sep = o.val
		case "k", "key":
			a, b, _ := strings.Cut(o.val, ",")
			s.k1, _ = strconv.Atoi(strings.TrimRightFunc(a, unicode.IsLetter))
			s.k2, _ = strconv.Atoi(strings.TrimRightFunc(b, unicode.IsLetter))
			if strings.ContainsRune(a, 'n') {
				s.numeric = true
			}
		case "o", "output":
			s.out = o.val
		}
	}
	return s, files, nil
}

// key is the part of the line l that sort compares: the -k fields joined
// by the separator (a space when fields are blank-separated), lowered
// under -f.
func (s sortOpts) key(l string) string {
	if s.k1 > 0 {
		var f []string
		if s.sep == "" {
			f = strings.Fields(l)
		} else {
			f = strings.Split(l, s.sep)
		}
		end := len(f)
		if s.k2 > 0 {
			end = min(s.k2, len(f))
		}
		if s.k1-1 >= len(f) {
			l = ""
		} else {
			j := s.sep
			if j == "" {
				j = " "
			}
			l = strings.Join(f[s.k1-1:max(end, s.k1)], j)
		}
	}
	if s.fold {
		l = strings.ToLower(l)
	}
	return l
}

// sortNumber is the number a key starts with (after blanks), 0 when none.
func sortNumber(s string) float64 {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] == '-' || s[i] == '.' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	v, _ := strconv.ParseFloat(s[:i], 64)
	return v
}

// compare orders two lines by their keys, as numbers under -n.
func (s sortOpts) compare(a, b string) int {
	ka, kb := s.key(a), s.key(b)
	if s.numeric {
		if na, nb := sortNumber(ka), sortNumber(kb); na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
		return 0
	}
	return strings.Compare(ka, kb)
}

// sort sorts ls in place, stably, and returns it, with only the first of
// each run of equal keys under -u. Lines whose keys tie are ordered by the
// whole line unless -u, -k, -n or -f is given.
func (s sortOpts) sort(ls []string) []string {
	slices.SortStableFunc(ls, func(a, b string) int {
		c := s.compare(a, b)
		if c == 0 && !s.unique && s.k1 == 0 && !s.numeric && !s.fold {
			c = strings.Compare(a, b)
		}
		if s.reverse {
			return -c
		}
		return c
	})
	if s.unique {
		ls = slices.CompactFunc(ls, func(a, b string) bool { return s.compare(a, b) == 0 })
	}
	return ls
}

// runUniq is uniq: uniq [-cdui] [INPUT [OUTPUT]].
func runUniq(p *proc, name string, args []string) int {
	opts, files, err := getopt(args, "cdui", []string{"count", "repeated", "unique", "ignore-case"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	var count, dups, uniques, fold bool
	for _, o := range opts {
		switch o.name {
		case "c", "count":
			count = true
		case "d", "repeated":
			dups = true
		case "u", "unique":
			uniques = true
		case "i", "ignore-case":
			fold = true
		}
	}
	if len(files) > 2 {
		return p.fail(1, name, "extra operand %q", files[2])
	}
	ls, ok := p.readLines(name, files[:min(len(files), 1)])
	w := p.stdout
	if len(files) == 2 {
		f, err := os.Create(p.path(files[1]))
		if err != nil {
			return p.fail(1, name, "%v", err)
		}
		defer f.Close()
		w = f
	}
	same := func(a, b string) bool {
		if fold {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	for i := 0; i < len(ls); {
		j := i + 1
		for j < len(ls) && same(ls[j], ls[i]) {
			j++
		}
		n := j - i
		if (!dups || n > 1) && (!uniques || n == 1) {
			if count {
				fmt.Fprintf(bw, "%7d %s\n", n, ls[i])
			} else {
				bw.WriteString(ls[i] + "\n")
			}
		}
		i = j
	}
	return status(ok)
}

// runCut is cut: cut -b LIST | -c LIST | -f LIST [-d DELIM] [-s] [FILE]...
func runCut(p *proc, name string, args []string) int {
	opts, files, err := getopt(args, "b:c:f:d:s", []string{"bytes=", "characters=", "fields=", "delimiter=", "only-delimited", "output-delimiter="}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	mode, list, delim, only, outDelim := byte(0), "", "\t", false, ""
	for _, o := range opts {
		switch o.name {
		case "b", "bytes", "c", "characters":
			mode, list = 'c', o.val
		case "f", "fields":
			mode, list = 'f', o.val
		case "d", "delimiter":
			delim = o.val
		case "s", "only-delimited":
			only = true
		case "output-delimiter":
			outDelim = o.val
		}
	}
	if mode == 0 {
		return p.fail(1, name, "you must specify a list of bytes, characters, or fields")
	}
	if outDelim == "" {
		outDelim = delim
	}
	type span struct{ a, b int }
	var spans []span
	for part := range strings.SplitSeq(list, ",") {
		a, b, isRange := strings.Cut(part, "-")
		lo, hi := 1, 1<<30
		var err error
		if a != "" {
			if lo, err = strconv.Atoi(a); err != nil {
				return p.fail(1, name, "invalid list %q", list)
			}
		}
		if !isRange {
			hi = lo
		} else if b != "" {
			if hi, err = strconv.Atoi(b); err != nil {
				return p.fail(1, name, "invalid list %q", list)
			}
		}
		spans = append(spans, span{lo, hi})
	}
	in := func(i int) bool {
		for _, s := range spans {
			if i >= s.a && i <= s.b {
				return true
			}
		}
		return false
	}
	ls, ok := p.readLines(name, files)
	bw := bufio.NewWriter(p.stdout)
	defer bw.Flush()
	for _, l := range ls {
		var parts []string
		if mode == 'c' {
			var b strings.Builder
			for i, r := range []rune(l) {
				if in(i + 1) {
					b.WriteRune(r)
				}
			}
			bw.WriteString(b.String() + "\n")
			continue
		}
		if !strings.Contains(l, delim) {
			if !only {
				bw.WriteString(l + "\n")
			}
			continue
		}
		for i, f := range strings.Split(l, delim) {
			if in(i + 1) {
				parts = append(parts, f)
			}
		}
		bw.WriteString(strings.Join(parts, outDelim) + "\n")
	}
	return status(ok)
}

// trSet expands a tr set: ranges a-z, classes [:alpha:], escapes.
func trSet(s string) []rune {
	classes := map[string]func(rune) bool{
		"alpha": unicode.IsLetter, "digit": unicode.IsDigit, "alnum": func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
		"upper": unicode.IsUpper, "lower": unicode.IsLower, "space": unicode.IsSpace, "punct": unicode.IsPunct,
		"blank": func(r rune) bool { return r == ' ' || r == '\t' },
	}
	rs := []rune(unescape(s))
	var out []rune
	for i := 0; i < len(rs); i++ {
		if rs[i] == '[' && i+1 < len(rs) && rs[i+1] == ':' {
			if end := strings.Index(string(rs[i:]), ":]"); end > 0 {
				if f := classes[string(rs[i+2:i+end])]; f != nil {
					for r := rune(0); r < 128; r++ {
						if f(r) {
							out = append(out, r)
						}
					}
					i += end + 1
					continue
				}
			}
		}
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] >= rs[i] {
			for r := rs[i]; r <= rs[i+2]; r++ {
				out = append(out, r)
			}
			i += 2
			continue
		}
		out = append(out, rs[i])
	}
	return out
}

// runTr is tr: tr [-ds] SET1 [SET2].
func runTr(p *proc, name string, args []string) int {
	opts, sets, err := getopt(args, "dsc", []string{"delete", "squeeze-repeats"}, false)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	del, squeeze := false, false
	for _, o := range opts {
		switch o.name {
		case "d", "delete":
			del = true
		case "s", "squeeze-repeats":
			squeeze = true
		}
	}
	if len(sets) == 0 || (!del && !squeeze && len(sets) < 2) {
		return p.fail(1, name, "missing operand")
	}
	from := trSet(sets[0])
	var to []rune
	if len(sets) > 1 {
		to = trSet(sets[1])
	}
	data, err := io.ReadAll(p.stdin)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	var b strings.Builder
	var prev rune = -1
	for _, r := range string(data) {
		i := slices.Index(from, r)
		switch {
		case i >= 0 && del:
			continue
		case i >= 0 && len(to) > 0:
			r = to[min(i, len(to)-1)]
		}
		if squeeze && r == prev && (slices.Contains(from, r) && len(to) == 0 || slices.Contains(to, r)) {
			continue
		}
		b.WriteRune(r)
		prev = r
	}
	io.WriteString(p.stdout, b.String())
	return 0
}

// runTee is tee: tee [-a] [FILE]...
func runTee(p *proc, name string, args []string) int {
	opts, files, err := getopt(args, "ai", []string{"append"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	for _, o := range opts {
		if o.name == "a" || o.name == "append" {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
	}
	ws := []io.Writer{p.stdout}
	ok := true
	for _, f := range files {
		fh, err := os.OpenFile(p.path(f), flags, 0o644)
		if err != nil {
			p.fail(1, name, "%v", err)
			ok = false
			continue
		}
		defer fh.Close()
		ws = append(ws, fh)
	}
	if _, err := io.Copy(io.MultiWriter(ws...), p.stdin); err != nil {
		return p.fail(1, name, "%v", err)
	}
	return status(ok)
}

// runSeq is seq: seq [-s SEP] [-w] [FIRST [INCREMENT]] LAST.
func runSeq(p *proc, name string, args []string) int {
	var nums []string
	sep := "\n"
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s" && i+1 < len(args):
			sep = unescape(args[i+1])
			i++
		case a == "-w":
		default:
			nums = append(nums, a)
		}
	}
	vals := []float64{1, 1, 0}
	switch len(nums) {
	case 1:
		vals[2], _ = strconv.ParseFloat(nums[0], 64)
	case 2:
		vals[0], _ = strconv.ParseFloat(nums[0], 64)
		vals[2], _ = strconv.ParseFloat(nums[1], 64)
	case 3:
		for i := range nums {
			vals[i], _ = strconv.ParseFloat(nums[i], 64)
		}
	default:
		return p.fail(1, name, "usage: seq [FIRST [INCREMENT]] LAST")
	}
	if vals[1] == 0 {
		return p.fail(1, name, "invalid zero increment")
	}
	bw := bufio.NewWriter(p.stdout)
	defer bw.Flush()
	first := true
	for v := vals[0]; (vals[1] > 0 && v <= vals[2]) || (vals[1] < 0 && v >= vals[2]); v += vals[1] {
		if !first {
			bw.WriteString(sep)
		}
		first = false
		bw.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	if !first {
		bw.WriteString("\n")
	}
	return 0
}

// runTac is tac: the lines of the inputs, last first.
func runTac(p *proc, name string, args []string) int {
	ls, ok := p.readLines(name, args)
	bw := bufio.NewWriter(p.stdout)
	defer bw.Flush()
	for _, l := range slices.Backward(ls) {
		bw.WriteString(l + "\n")
	}
	return status(ok)
}

// runYes is yes: its arguments (or y), forever, until its output closes.
func runYes(p *proc, _ string, args []string) int {
	s := "y"
	if len(args) > 0 {
		s = strings.Join(args, " ")
	}
	line := []byte(strings.Repeat(s+"\n", max(1, 4096/(len(s)+1))))
	for {
		if _, err := p.stdout.Write(line); err != nil {
			return 0
		}
	}
}

// runSum is sha256sum, sha1sum and md5sum (no -c).
func runSum(p *proc, name string, args []string) int {
	mk := map[string]func() hash.Hash{"sha256sum": sha256.New, "sha1sum": sha1.New, "md5sum": md5.New}[name]
	files := args
	if len(files) == 0 {
		files = []string{"-"}
	}
	ok := p.inputs(name, files, func(file string, r io.Reader) error {
		h := mk()
		if _, err := io.Copy(h, r); err != nil {
			return err
		}
		fmt.Fprintf(p.stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), file)
		return nil
	})
	return status(ok)
}
