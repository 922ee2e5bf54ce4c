package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// grepOpts is what grep was asked for.
type grepOpts struct {
	invert, count, list, listMissing, quiet, silent, number, only, ignoreBinary bool
	recursive, name, noName                                                     bool
	max, before, after                                                          int
	include, exclude, excludeDir                                                []string
	re                                                                          *regexp.Regexp
}

// grepSyntax is how grep's options say its patterns are to be read and
// matched, and whether file names are wanted, before it compiles them.
type grepSyntax struct {
	pats                         []string
	fixed, extended, icase       bool
	word, line, withName, noName bool
}

// runGrep is grep: grep [-rRnivlLcqsHhwxoFEGI] [-e PAT]... [-m N] [-A N]
// [-B N] [-C N] [--include GLOB] [--exclude GLOB] [--exclude-dir GLOB]
// [PAT] [FILE]... Patterns are POSIX basic expressions unless -E (egrep)
// or -F (fgrep). Exit 0 when a line matched, 1 when none, 2 on trouble.
func runGrep(p *proc, name string, args []string) int {
	g, syn, operands, err := parseGrep(p, name, args)
	if err == nil {
		g.re, err = syn.compile()
	}
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	if len(operands) == 0 {
		if g.recursive {
			operands = []string{"."}
		} else {
			operands = []string{"-"}
		}
	}
	g.name = (len(operands) > 1 || g.recursive || syn.withName) && !syn.noName
	return g.search(p, name, operands)
}

// parseGrep reads grep's command line (name is fgrep or egrep for those)
// into its options, the syntax of its patterns and its file operands. The
// patterns come from -e and -f or else from the first operand.
func parseGrep(p *proc, name string, args []string) (grepOpts, grepSyntax, []string, error) {
	opts, operands, err := getopt(args, "rRnivlLcqsHhwxoFEGIe:m:A:B:C:f:", []string{
		"recursive", "line-number", "ignore-case", "invert-match", "files-with-matches", "files-without-match", "count",
		"quiet", "silent", "no-messages", "with-filename", "no-filename", "word-regexp", "line-regexp", "only-matching",
		"fixed-strings", "extended-regexp", "basic-regexp", "regexp=", "max-count=", "after-context=", "before-context=",
		"context=", "include=", "exclude=", "exclude-dir=", "file=", "color=", "colour=",
	}, true)
	if err != nil {
		return grepOpts{}, grepSyntax{}, nil, err
	}
	g := grepOpts{max: -1}
	syn := grepSyntax{fixed: name == "fgrep", extended: name == "egrep"}
	for _, o := range opts {
		if err := g.set(p, o, &syn); err != nil {
			return grepOpts{}, grepSyntax{}, nil, err
		}
	}
	if syn.pats == nil {
		if len(operands) == 0 {
			return grepOpts{}, grepSyntax{}, nil, errors.New("usage: grep [OPTION]... PATTERNS [FILE]...")
		}
		syn.pats = strings.Split(operands[0], "\n")
		operands = operands[1:]
	}
	return g, syn, operands, nil
}

// set applies one option to g, or to syn where it is about the patterns. A
// numeric option whose value is not a number is an error ("invalid
// number"); -f reads its file now, and fails when it cannot.
func (g *grepOpts) set(p *proc, o opt, syn *grepSyntax) error {
	bad := false
	num := func(v string) int {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			bad = true
		}
		return n
	}

	switch o.name {
	case "r", "R", "recursive":
		g.recursive = true
	case "n", "line-number":
		g.number = true
	case "i", "ignore-case":
		syn.icase = true
	case "v", "invert-match":
		g.invert = true
	case "l", "files-with-matches":
		g.list = true
	case "L", "files-without-match":
		g.listMissing = true
	case "c", "count":
		g.count = true
	case "q", "quiet", "silent":
		g.quiet = true
	case "s", "no-messages":
		g.silent = true
	case "H", "with-filename":
		syn.withName = true
	case "h", "no-filename":
		syn.noName = true
	case "w", "word-regexp":
		syn.word = true
	case "x", "line-regexp":
		syn.line = true
	case "o", "only-matching":
		g.only = true
	case "F", "fixed-strings":
		syn.fixed = true
	case "E", "extended-regexp":
		syn.extended = true
	case "G", "basic-regexp":
		syn.extended, syn.fixed = false, false
	case "I":
		g.ignoreBinary = true
	case "e", "regexp":
		syn.pats = append(syn.pats, o.val)
	case "f", "file":
		data, err := os.ReadFile(p.path(o.val))
		if err != nil {
			return err
		}
		syn.pats = append(syn.pats, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	case "m", "max-count":
		g.max = num(o.val)
	case "A", "after-context":
		g.after = num(o.val)
	case "B", "before-context":
		g.before = num(o.val)
	case "C", "context":
		g.after = num(o.val)
		g.before = g.after
	case "include":
		g.include = append(g.include, o.val)
	case "exclude":
		g.exclude = append(g.exclude, o.val)
	case "exclude-dir":
		g.excludeDir = append(g.excludeDir, o.val)
	}
	if bad {
		return errors.New("invalid number")
	}
	return nil
}

// compile joins the patterns into one regular expression, any of them
// matching, with -w, -x and -i applied to the whole.
func (syn grepSyntax) compile() (*regexp.Regexp, error) {
	var alts []string
	for _, pat := range syn.pats {
		var src string
		if syn.fixed {
			src = regexp.QuoteMeta(pat)
		} else {
			re, err := compileRE(pat, syn.extended, false)
			if err != nil {
				return nil, err
			}
			src = re.String()
		}
		alts = append(alts, "(?:"+src+")")
	}
	src := strings.Join(alts, "|")
	if syn.word {
		src = `(?:^|\b)(?:` + src + `)(?:\b|$)`
	}
	if syn.line {
		src = `^(?:` + src + `)$`
	}
	if syn.icase {
		src = "(?i)" + src
	}
	return regexp.Compile(src)
}

// search greps each operand ("-" being standard input, a directory being
// walked under -r) and returns grep's exit code: 0 when a line matched, 1
// when none did, 2 on trouble unless -q found a match, which stops it.
func (g *grepOpts) search(p *proc, name string, operands []string) int {
	matched, trouble := false, false
	for _, op := range operands {
		if op == "-" {
			m, err := g.file(p, "(standard input)", p.stdin)
			matched = matched || m
			trouble = trouble || err != nil
			if m && g.quiet {
				return 0
			}
			continue
		}
		err := g.walk(p, op, func(path string, r io.Reader) bool {
			m, err := g.file(p, path, r)
			matched = matched || m
			if err != nil {
				trouble = true
				if !g.silent {
					p.fail(2, name, "%s: %v", path, err)
				}
			}
			return !(m && g.quiet)
		})
		if err != nil {
			trouble = true
			if !g.silent {
				p.fail(2, name, "%v", err)
			}
		}
		if matched && g.quiet {
			return 0
		}
	}
	switch {
	case trouble && !(g.quiet && matched):
		return 2
	case matched:
		return 0
	}
	return 1
}

// walk calls f with each file under root (root itself when it is a file);
// f returns false to stop.
func (g *grepOpts) walk(p *proc, root string, f func(path string, r io.Reader) bool) error {
	fi, err := os.Stat(p.path(root))
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		file, err := os.Open(p.path(root))
		if err != nil {
			return err
		}
		defer file.Close()
		f(root, file)
		return nil
	}
	if !g.recursive {
		return fmt.Errorf("%s: Is a directory", root)
	}
	stop := fmt.Errorf("stop")
	err = filepath.WalkDir(p.path(root), func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := root
		if full != p.path(root) {
			rel = filepath.Join(root, strings.TrimPrefix(full, p.path(root)+string(filepath.Separator)))
			if root == "." {
				rel = "./" + strings.TrimPrefix(rel, "./")
			}
		}
		if d.IsDir() {
			if full != p.path(root) && matchAny(g.excludeDir, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if (len(g.include) > 0 && !matchAny(g.include, d.Name())) || matchAny(g.exclude, d.Name()) {
			return nil
		}
		file, err := os.Open(full)
		if err != nil {
			return err
		}
		defer file.Close()
		if !f(rel, file) {
			return stop
		}
		return nil
	})
	if err == stop {
		return nil
	}
	return err
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, name); ok {
			return true
		}
	}
	return false
}

// file greps one input and reports whether a line matched.
func (g *grepOpts) file(p *proc, path string, r io.Reader) (bool, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return false, err
	}
	binary := bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
	if binary && g.ignoreBinary {
		return false, nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	prefix := func(i int, sep string) string {
		s := ""
		if g.name {
			s = path + sep
		}
		if g.number {
			s += strconv.Itoa(i+1) + sep
		}
		return s
	}
	matches, lastPrinted, afterLeft := 0, -1, 0
	quiet := g.quiet || g.list || g.listMissing || g.count
	for i, l := range lines {
		text := strings.TrimSuffix(l, "\n")
		hit := g.re.MatchString(text) != g.invert
		if !hit {
			if afterLeft > 0 && !quiet {
				fmt.Fprint(p.stdout, prefix(i, "-")+text+"\n")
				lastPrinted = i
				afterLeft--
			}
			continue
		}
		if g.max >= 0 && matches >= g.max {
			break
		}
		matches++
		if quiet {
			if g.quiet || g.list || g.listMissing {
				break
			}
			continue
		}
		if binary {
			fmt.Fprintf(p.stdout, "Binary file %s matches\n", path)
			break
		}
		if g.before > 0 || g.after > 0 {
			from := max(lastPrinted+1, i-g.before)
			if lastPrinted >= 0 && from > lastPrinted+1 {
				fmt.Fprintln(p.stdout, "--")
			}
			for j := from; j < i; j++ {
				fmt.Fprint(p.stdout, prefix(j, "-")+strings.TrimSuffix(lines[j], "\n")+"\n")
			}
		}
		if g.only && !g.invert {
			for _, m := range g.re.FindAllString(text, -1) {
				if m != "" {
					fmt.Fprint(p.stdout, prefix(i, ":")+m+"\n")
				}
			}
		} else {
			fmt.Fprint(p.stdout, prefix(i, ":")+text+"\n")
		}
		lastPrinted, afterLeft = i, g.after
	}
	switch {
	case g.quiet:
	case g.list && matches > 0:
		fmt.Fprintln(p.stdout, path)
	case g.listMissing && matches == 0:
		fmt.Fprintln(p.stdout, path)
	case g.count:
		if g.name {
			fmt.Fprintf(p.stdout, "%s:%d\n", path, matches)
		} else {
			fmt.Fprintf(p.stdout, "%d\n", matches)
		}
	}
	return matches > 0, nil
}
