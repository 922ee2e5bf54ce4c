package main

import (
	"bytes"
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

// runGrep is grep: grep [-rRnivlLcqsHhwxoFEGI] [-e PAT]... [-m N] [-A N]
// [-B N] [-C N] [--include GLOB] [--exclude GLOB] [--exclude-dir GLOB]
// [PAT] [FILE]... Patterns are POSIX basic expressions unless -E (egrep)
// or -F (fgrep). Exit 0 when a line matched, 1 when none, 2 on trouble.
func runGrep(p *proc, name string, args []string) int {
	opts, operands, err := getopt(args, "rRnivlLcqsHhwxoFEGIe:m:A:B:C:f:", []string{
		"recursive", "line-number", "ignore-case", "invert-match", "files-with-matches", "files-without-match", "count",
		"quiet", "silent", "no-messages", "with-filename", "no-filename", "word-regexp", "line-regexp", "only-matching",
		"fixed-strings", "extended-regexp", "basic-regexp", "regexp=", "max-count=", "after-context=", "before-context=",
		"context=", "include=", "exclude=", "exclude-dir=", "file=", "color=", "colour=",
	}, true)
	if err != nil {
		return p.fail(2, name, "%v", err)
	}
	var (
		g                           = grepOpts{max: -1}
		pats                        []string
		fixed, extended, icase      bool
		word, line, withName, noNam bool
	)
	fixed, extended = name == "fgrep", name == "egrep"
	num := func(v string) int {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			g.max = -2
		}
		return n
	}
	for _, o := range opts {
		switch o.name {
		case "r", "R", "recursive":
			g.recursive = true
		case "n", "line-number":
			g.number = true
		case "i", "ignore-case":
			icase = true
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
			withName = true
		case "h", "no-filename":
			noNam = true
		case "w", "word-regexp":
			word = true
		case "x", "line-regexp":
			line = true
		case "o", "only-matching":
			g.only = true
		case "F", "fixed-strings":
			fixed = true
		case "E", "extended-regexp":
			extended = true
		case "G", "basic-regexp":
			extended, fixed = false, false
		case "I":
			g.ignoreBinary = true
		case "e", "regexp":
			pats = append(pats, o.val)
		case "f", "file":
			data, err := os.ReadFile(p.path(o.val))
			if err != nil {
				return p.fail(2, name, "%v", err)
			}
			pats = append(pats, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
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
	}
	if g.max == -2 {
		return p.fail(2, name, "invalid number")
	}
	if pats == nil {
		if len(operands) == 0 {
			return p.fail(2, name, "usage: grep [OPTION]... PATTERNS [FILE]...")
		}
		pats = strings.Split(operands[0], "\n")
		operands = operands[1:]
	}
	var alts []string
	for _, pat := range pats {
		var src string
		if fixed {
			src = regexp.QuoteMeta(pat)
		} else {
			re, err := compileRE(pat, extended, false)
			if err != nil {
				return p.fail(2, name, "%v", err)
			}
			src = re.String()
		}
		alts = append(alts, "(?:"+src+")")
	}
	src := strings.Join(alts, "|")
	if word {
		src = `(?:^|\b)(?:` + src + `)(?:\b|$)`
	}
	if line {
		src = `^(?:` + src + `)$`
	}
	if icase {
		src = "(?i)" + src
	}
	if g.re, err = regexp.Compile(src); err != nil {
		return p.fail(2, name, "%v", err)
	}
	if len(operands) == 0 {
		if g.recursive {
			operands = []string{"."}
		} else {
			operands = []string{"-"}
		}
	}
	g.name = (len(operands) > 1 || g.recursive || withName) && !noNam
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
