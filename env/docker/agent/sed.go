package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// runSed is sed: sed [-nEr] [-i[SUFFIX]] [-s] {SCRIPT | -e SCRIPT... | -f
// FILE} [FILE]... It knows the POSIX commands ({ } ! = a b c d D g G h H i
// n N p P q s t x y : #) and GNU's q/Q exit codes, T, one-line a/i/c TEXT,
// addresses N, $, /RE/, \cREc, FIRST~STEP and ADDR,+N, and the I flag.
// Regular expressions are basic unless -E or -r.
func runSed(p *proc, name string, args []string) int {
	// -i takes an optional attached suffix: handle it before getopt.
	inPlace, suffix := false, ""
	var rest []string
	for _, a := range args {
		if a == "--in-place" || (strings.HasPrefix(a, "-i") && !strings.HasPrefix(a, "--")) {
			inPlace, suffix = true, strings.TrimPrefix(a, "-i")
			continue
		}
		if s, ok := strings.CutPrefix(a, "--in-place="); ok {
			inPlace, suffix = true, s
			continue
		}
		rest = append(rest, a)
	}
	opts, operands, err := getopt(rest, "nErse:f:", []string{"quiet", "silent", "regexp-extended", "separate", "expression=", "file=", "posix", "debug"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	var scripts []string
	quiet, extended, separate := false, false, inPlace
	for _, o := range opts {
		switch o.name {
		case "n", "quiet", "silent":
			quiet = true
		case "E", "r", "regexp-extended":
			extended = true
		case "s", "separate":
			separate = true
		case "e", "expression":
			scripts = append(scripts, o.val)
		case "f", "file":
			data, err := os.ReadFile(p.path(o.val))
			if err != nil {
				return p.fail(1, name, "%v", err)
			}
			scripts = append(scripts, strings.TrimSuffix(string(data), "\n"))
		}
	}
	if scripts == nil {
		if len(operands) == 0 {
			return p.fail(1, name, "usage: sed [OPTION]... {SCRIPT} [FILE]...")
		}
		scripts, operands = operands[:1], operands[1:]
	}
	prog, err := parseSed(strings.Join(scripts, "\n"), extended)
	if err != nil {
		return p.fail(1, name, "-e expression: %v", err)
	}
	if inPlace && len(operands) == 0 {
		return p.fail(1, name, "no input files")
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	run := &sedRun{prog: prog, quiet: quiet}
	if !separate {
		var readers []io.Reader
		for _, f := range operands {
			r, err := p.open(f)
			if err != nil {
				return p.fail(2, name, "can't read %s: %v", f, err)
			}
			defer r.Close()
			readers = append(readers, r)
		}
		w := bufio.NewWriter(p.stdout)
		code, err := run.stream(io.MultiReader(readers...), w)
		w.Flush()
		if err != nil {
			return p.fail(4, name, "%v", err)
		}
		return code
	}
	code := 0
	for _, f := range operands {
		path := p.path(f)
		data, err := os.ReadFile(path)
		if f == "-" {
			data, err = io.ReadAll(p.stdin)
		}
		if err != nil {
			p.fail(2, name, "can't read %s: %v", f, err)
			code = 2
			continue
		}
		var out bytes.Buffer
		c, err := run.stream(bytes.NewReader(data), &out)
		if err != nil {
			return p.fail(4, name, "%v", err)
		}
		if !inPlace {
			p.stdout.Write(out.Bytes())
		} else {
			if suffix != "" {
				bak := strings.ReplaceAll(suffix, "*", filepath.Base(path))
				if !strings.Contains(suffix, "*") {
					bak = path + suffix
				} else if !strings.Contains(bak, "/") {
					bak = filepath.Join(filepath.Dir(path), bak)
				}
				if err := os.WriteFile(bak, data, 0o644); err != nil {
					return p.fail(4, name, "%v", err)
				}
			}
			mode := os.FileMode(0o644)
			if fi, err := os.Stat(path); err == nil {
				mode = fi.Mode().Perm()
			}
			if err := os.WriteFile(path, out.Bytes(), mode); err != nil {
				return p.fail(4, name, "%v", err)
			}
		}
		if c != 0 {
			return c
		}
		run.line = 0
	}
	return code
}

type sedAddr struct {
	kind  byte // 0 none, 'n' line, '$' last, '/' regexp, '~' first~step, '+' +N (second only)
	n, n2 int
	re    *regexp.Regexp
}

type sedCmd struct {
	a1, a2  sedAddr
	negate  bool
	name    byte
	text    string // a, i, c; label of b, t, T, :
	re      *regexp.Regexp
	repl    string
	global  bool
	nth     int
	print   bool
	from    []rune // y
	to      []rune
	exit    int // q, Q
	jump    int // b, t, T: index to go to; {: index of its }
	active  bool
	rangeTo int // a +N range's last line
}

type sedParser struct {
	s        string
	i        int
	extended bool
	lastRE   *regexp.Regexp
}

func parseSed(script string, extended bool) ([]*sedCmd, error) {
	ps := &sedParser{s: script, extended: extended}
	var cmds []*sedCmd
	var open []int
	labels := map[string]int{}
	for {
		ps.skip(" \t\n;")
		if ps.i >= len(ps.s) {
			break
		}
		if ps.s[ps.i] == '#' {
			for ps.i < len(ps.s) && ps.s[ps.i] != '\n' {
				ps.i++
			}
			continue
		}
		c := &sedCmd{}
		var err error
		if c.a1, err = ps.addr(false); err != nil {
			return nil, err
		}
		if c.a1.kind != 0 && ps.peek() == ',' {
			ps.i++
			if c.a2, err = ps.addr(true); err != nil {
				return nil, err
			}
			if c.a2.kind == 0 {
				return nil, errors.New("unexpected ','")
			}
		}
		ps.skip(" \t")
		if ps.peek() == '!' {
			c.negate = true
			ps.i++
			ps.skip(" \t")
		}
		if ps.i >= len(ps.s) {
			return nil, errors.New("missing command")
		}
		c.name = ps.s[ps.i]
		ps.i++
		switch c.name {
		case '{':
			open = append(open, len(cmds))
		case '}':
			if len(open) == 0 {
				return nil, errors.New("unexpected }")
			}
			cmds[open[len(open)-1]].jump = len(cmds) + 1
			open = open[:len(open)-1]
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z':
		case 'q', 'Q':
			ps.skip(" \t")
			j := ps.i
			for ps.i < len(ps.s) && ps.s[ps.i] >= '0' && ps.s[ps.i] <= '9' {
				ps.i++
			}
			c.exit, _ = strconv.Atoi(ps.s[j:ps.i])
		case 'a', 'i', 'c':
			c.text = ps.text()
		case 'b', 't', 'T', ':':
			ps.skip(" \t")
			j := ps.i
			for ps.i < len(ps.s) && ps.s[ps.i] != '\n' && ps.s[ps.i] != ';' {
				ps.i++
			}
			c.text = strings.TrimSpace(ps.s[j:ps.i])
			if c.name == ':' {
				if c.text == "" {
					return nil, errors.New("\":\" lacks a label")
				}
				labels[c.text] = len(cmds)
			}
		case 's':
			if err := ps.subst(c); err != nil {
				return nil, err
			}
		case 'y':
			d, err := ps.delim()
			if err != nil {
				return nil, err
			}
			from, err1 := ps.until(d)
			to, err2 := ps.until(d)
			if err := errors.Join(err1, err2); err != nil {
				return nil, err
			}
			c.from, c.to = []rune(unescape(from)), []rune(unescape(to))
			if len(c.from) != len(c.to) {
				return nil, errors.New("strings for `y' command are different lengths")
			}
		default:
			return nil, fmt.Errorf("unknown command: `%c'", c.name)
		}
		cmds = append(cmds, c)
	}
	if len(open) > 0 {
		return nil, errors.New("unmatched `{'")
	}
	for _, c := range cmds {
		if c.name == 'b' || c.name == 't' || c.name == 'T' {
			c.jump = len(cmds)
			if c.text != "" {
				j, ok := labels[c.text]
				if !ok {
					return nil, fmt.Errorf("can't find label for jump to `%s'", c.text)
				}
				c.jump = j
			}
		}
	}
	return cmds, nil
}

func (ps *sedParser) peek() byte {
	if ps.i < len(ps.s) {
		return ps.s[ps.i]
	}
	return 0
}

func (ps *sedParser) skip(set string) {
	for ps.i < len(ps.s) && strings.IndexByte(set, ps.s[ps.i]) >= 0 {
		ps.i++
	}
}

func (ps *sedParser) number() int {
	j := ps.i
	for ps.i < len(ps.s) && ps.s[ps.i] >= '0' && ps.s[ps.i] <= '9' {
		ps.i++
	}
	n, _ := strconv.Atoi(ps.s[j:ps.i])
	return n
}

func (ps *sedParser) addr(second bool) (sedAddr, error) {
	var a sedAddr
	switch c := ps.peek(); {
	case c >= '0' && c <= '9':
		a.kind, a.n = 'n', ps.number()
		if ps.peek() == '~' {
			ps.i++
			a.kind, a.n2 = '~', ps.number()
		}
	case c == '+' && second:
		ps.i++
		a.kind, a.n = '+', ps.number()
	case c == '$':
		ps.i++
		a.kind = '$'
	case c == '/' || c == '\\':
		if c == '\\' {
			ps.i++
		}
		d := ps.s[ps.i]
		ps.i++
		src, err := ps.until(d)
		if err != nil {
			return a, err
		}
		icase := false
		if ps.peek() == 'I' {
			icase = true
			ps.i++
		}
		a.kind = '/'
		if a.re, err = ps.regexp(src, icase); err != nil {
			return a, err
		}
	}
	return a, nil
}

// until reads up to the unescaped delimiter d and consumes it; "\d" becomes
// d (unless d is special in a regexp, where the escape stays meaningful).
func (ps *sedParser) until(d byte) (string, error) {
	var b strings.Builder
	for ps.i < len(ps.s) {
		c := ps.s[ps.i]
		ps.i++
		switch {
		case c == d:
			return b.String(), nil
		case c == '\\' && ps.i < len(ps.s):
			n := ps.s[ps.i]
			ps.i++
			if n == d {
				b.WriteByte(d)
			} else if n == '\n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '\n' && d != '\n':
			return "", fmt.Errorf("unterminated `%c'", d)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated address or command (delimiter %q)", d)
}

func (ps *sedParser) delim() (byte, error) {
	if ps.i >= len(ps.s) || ps.s[ps.i] == '\n' || ps.s[ps.i] == '\\' {
		return 0, errors.New("missing delimiter")
	}
	d := ps.s[ps.i]
	ps.i++
	return d, nil
}

func (ps *sedParser) regexp(src string, icase bool) (*regexp.Regexp, error) {
	if src == "" {
		if ps.lastRE == nil {
			return nil, errors.New("no previous regular expression")
		}
		return ps.lastRE, nil
	}
	re, err := compileRE(src, ps.extended, icase)
	if err != nil {
		return nil, err
	}
	ps.lastRE = re
	return re, nil
}

func (ps *sedParser) subst(c *sedCmd) error {
	d, err := ps.delim()
	if err != nil {
		return err
	}
	src, err := ps.until(d)
	if err != nil {
		return err
	}
	repl, err := ps.until(d)
	if err != nil {
		return err
	}
	c.repl = repl
	icase := false
	for ps.i < len(ps.s) {
		f := ps.s[ps.i]
		switch {
		case f == 'g':
			c.global = true
		case f == 'p':
			c.print = true
		case f == 'i' || f == 'I':
			icase = true
		case f >= '0' && f <= '9':
			c.nth = ps.number()
			continue
		case f == ' ' || f == '\t' || f == ';' || f == '\n' || f == '}' || f == '#':
			c.re, err = ps.regexp(src, icase)
			return err
		default:
			return fmt.Errorf("unknown option to `s': %c", f)
		}
		ps.i++
	}
	c.re, err = ps.regexp(src, icase)
	return err
}

// text reads the text of a, i or c: "a\<newline>TEXT" (lines continued by a
// trailing backslash) or GNU's one-line "a TEXT".
func (ps *sedParser) text() string {
	ps.skip(" \t")
	if strings.HasPrefix(ps.s[ps.i:], "\\\n") {
		ps.i += 2
	} else if ps.peek() == '\\' {
		ps.i++
	}
	var b strings.Builder
	for ps.i < len(ps.s) {
		c := ps.s[ps.i]
		ps.i++
		if c == '\\' && ps.i < len(ps.s) {
			b.WriteByte(ps.s[ps.i])
			ps.i++
			continue
		}
		if c == '\n' {
			break
		}
		b.WriteByte(c)
	}
	return b.String()
}

func unescape(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
}

// sedRun is the state of sed over its input.
type sedRun struct {
	prog  []*sedCmd
	quiet bool
	line  int
}

// stream runs the program over r, writing to w, and returns sed's exit code.
func (s *sedRun) stream(r io.Reader, w io.Writer) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	next := func() (string, bool, bool) { // line, had newline, ok
		l, err := br.ReadString('\n')
		if l == "" && err != nil {
			return "", false, false
		}
		return strings.TrimSuffix(l, "\n"), strings.HasSuffix(l, "\n"), true
	}
	pending, pendNL, ok := next()
	read := func() (string, bool, bool) {
		if !ok {
			return "", false, false
		}
		l, nl := pending, pendNL
		pending, pendNL, ok = next()
		s.line++
		return l, nl, true
	}
	last := func() bool { return !ok }
	var hold string
	var appendQ []string
	out := func(text string, nl bool) {
		io.WriteString(w, text)
		if nl {
			io.WriteString(w, "\n")
		}
	}
	flush := func() {
		for _, a := range appendQ {
			out(a, true)
		}
		appendQ = appendQ[:0]
	}
	ps, nl, more := read()
	for more {
		substituted := false
		deleted, quit, exit := false, false, -1
		restart := false
	cycle:
		for pc := 0; pc < len(s.prog); pc++ {
			c := s.prog[pc]
			if !s.matches(c, ps, last()) {
				if c.name == '{' {
					pc = c.jump - 1
				}
				continue
			}
			switch c.name {
			case '{', '}', ':':
			case '=':
				fmt.Fprintf(w, "%d\n", s.line)
			case 'a':
				appendQ = append(appendQ, c.text)
			case 'i':
				out(c.text, true)
			case 'c':
				if c.a2.kind == 0 || !c.active {
					out(c.text, true)
				}
				deleted = true
				break cycle
			case 'd':
				deleted = true
				break cycle
			case 'D':
				if i := strings.IndexByte(ps, '\n'); i >= 0 {
					ps = ps[i+1:]
					restart = true
				} else {
					deleted = true
				}
				break cycle
			case 'g':
				ps = hold
			case 'G':
				ps += "\n" + hold
			case 'h':
				hold = ps
			case 'H':
				hold += "\n" + ps
			case 'x':
				ps, hold = hold, ps
			case 'z':
				ps = ""
			case 'n':
				if !s.quiet {
					out(ps, nl)
				}
				flush()
				l, lnl, ok := read()
				if !ok {
					deleted = true // already printed
					break cycle
				}
				ps, nl = l, lnl
			case 'N':
				l, lnl, ok := read()
				if !ok {
					break cycle // GNU prints the pattern space
				}
				ps, nl = ps+"\n"+l, lnl
			case 'p':
				out(ps, true)
			case 'P':
				first, _, _ := strings.Cut(ps, "\n")
				out(first, true)
			case 'q':
				quit, exit = true, c.exit
				break cycle
			case 'Q':
				quit, exit, deleted = true, c.exit, true
				break cycle
			case 's':
				if r, ok := substitute(c, ps); ok {
					ps, substituted = r, true
					if c.print {
						out(ps, true)
					}
				}
			case 'y':
				ps = strings.Map(func(r rune) rune {
					for i, f := range c.from {
						if f == r {
							return c.to[i]
						}
					}
					return r
				}, ps)
			case 'b':
				pc = c.jump - 1
			case 't', 'T':
				if substituted == (c.name == 't') {
					substituted = false
					pc = c.jump - 1
				}
			}
		}
		if !deleted && !s.quiet {
			out(ps, nl || !last())
		}
		flush()
		if quit {
			return max(exit, 0), nil
		}
		if restart {
			continue
		}
		ps, nl, more = read()
	}
	return 0, nil
}

// matches reports whether c applies to the current line, updating its range.
func (s *sedRun) matches(c *sedCmd, ps string, last bool) bool {
	one := func(a sedAddr) bool {
		switch a.kind {
		case 'n':
			return s.line == a.n
		case '$':
			return last
		case '/':
			return a.re.MatchString(ps)
		case '~':
			if a.n2 <= 0 {
				return s.line == a.n
			}
			return s.line >= a.n && (s.line-a.n)%a.n2 == 0
		}
		return true
	}
	var m bool
	switch {
	case c.a1.kind == 0:
		m = true
	case c.a2.kind == 0:
		m = one(c.a1)
	case c.active:
		m = true
		switch c.a2.kind {
		case 'n':
			c.active = s.line < c.a2.n
		case '+':
			c.active = s.line < c.rangeTo
		default:
			c.active = !one(c.a2)
		}
	case one(c.a1):
		m = true
		c.active = true
		switch c.a2.kind {
		case 'n':
			c.active = c.a2.n > s.line
		case '+':
			c.rangeTo = s.line + c.a2.n
			c.active = c.a2.n > 0
		case '$':
			c.active = !last
		}
	}
	return m != c.negate
}

// substitute applies s to ps; ok says whether anything was replaced.
func substitute(c *sedCmd, ps string) (string, bool) {
	matches := c.re.FindAllStringSubmatchIndex(ps, -1)
	if len(matches) == 0 {
		return ps, false
	}
	var b strings.Builder
	prev, done := 0, false
	for k, m := range matches {
		n := k + 1
		if done || (c.nth > 0 && n < c.nth) {
			continue
		}
		b.WriteString(ps[prev:m[0]])
		expandRepl(&b, c.repl, ps, m)
		prev = m[1]
		if !c.global {
			done = true
		}
	}
	if prev == 0 && !done && b.Len() == 0 {
		return ps, false
	}
	b.WriteString(ps[prev:])
	return b.String(), true
}

func expandRepl(b *strings.Builder, repl, ps string, m []int) {
	group := func(g int) {
		if 2*g+1 < len(m) && m[2*g] >= 0 {
			b.WriteString(ps[m[2*g]:m[2*g+1]])
		}
	}
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '&':
			group(0)
		case c == '\\' && i+1 < len(repl):
			i++
			switch d := repl[i]; {
			case d >= '0' && d <= '9':
				group(int(d - '0'))
			case d == 'n':
				b.WriteByte('\n')
			case d == 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(d)
			}
		default:
			b.WriteByte(c)
		}
	}
}
