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

// sedArgs is what sed's command line asked for.
type sedArgs struct {
	prog                     []*sedCmd
	quiet, inPlace, separate bool
	suffix                   string // -i's backup suffix, * standing for the file's name
	operands                 []string
}

// runSed is sed: sed [-nEr] [-i[SUFFIX]] [-s] {SCRIPT | -e SCRIPT... | -f
// FILE} [FILE]... It knows the POSIX commands ({ } ! = a b c d D g G h H i
// n N p P q s t x y : #) and GNU's q/Q exit codes, T, one-line a/i/c TEXT,
// addresses N, $, /RE/, \cREc, FIRST~STEP and ADDR,+N, and the I flag.
// Regular expressions are basic unless -E or -r.
func runSed(p *proc, name string, args []string) int {
	a, err := parseSedArgs(p, args)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	run := &sedRun{prog: a.prog, quiet: a.quiet}
	if !a.separate {
		return run.joined(p, name, a.operands)
	}
	return run.separately(p, name, a)
}

// parseSedArgs reads sed's command line and parses its script, which comes
// from -e and -f or else from the first operand. With no file operand the
// input is standard input, which -i refuses.
func parseSedArgs(p *proc, args []string) (sedArgs, error) {
	// -i takes an optional attached suffix: handle it before getopt.
	var a sedArgs
	var rest []string
	for _, arg := range args {
		if arg == "--in-place" || (strings.HasPrefix(arg, "-i") && !strings.HasPrefix(arg, "--")) {
			a.inPlace, a.suffix = true, strings.TrimPrefix(arg, "-i")
			continue
		}
		if s, ok := strings.CutPrefix(arg, "--in-place="); ok {
			a.inPlace, a.suffix = true, s
			continue
		}
		rest = append(rest, arg)
	}
	opts, operands, err := getopt(rest, "nErse:f:", []string{"quiet", "silent", "regexp-extended", "separate", "expression=", "file=", "posix", "debug"}, true)
	if err != nil {
		return sedArgs{}, err
	}
	var scripts []string
	extended := false
	a.separate = a.inPlace
	for _, o := range opts {
		switch o.name {
		case "n", "quiet", "silent":
			a.quiet = true
		case "E", "r", "regexp-extended":
			extended = true
		case "s", "separate":
			a.separate = true
		case "e", "expression":
			scripts = append(scripts, o.val)
		case "f", "file":
			data, err := os.ReadFile(p.path(o.val))
			if err != nil {
				return sedArgs{}, err
			}
			scripts = append(scripts, strings.TrimSuffix(string(data), "\n"))
		}
	}
	if scripts == nil {
		if len(operands) == 0 {
			return sedArgs{}, errors.New("usage: sed [OPTION]... {SCRIPT} [FILE]...")
		}
		scripts, operands = operands[:1], operands[1:]
	}
	if a.prog, err = parseSed(strings.Join(scripts, "\n"), extended); err != nil {
		return sedArgs{}, fmt.Errorf("-e expression: %w", err)
	}
	if a.inPlace && len(operands) == 0 {
		return sedArgs{}, errors.New("no input files")
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	a.operands = operands
	return a, nil
}

// joined runs the program once over the files one after another, as one
// input, to standard output. An input that cannot be opened stops it
// before anything runs (exit 2); a failure to read exits 4.
func (run *sedRun) joined(p *proc, name string, files []string) int {
	var readers []io.Reader
	for _, f := range files {
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

// separately runs the program over each file by itself (-s, -i), its line
// numbers starting again, writing to standard output or, under -i, back to
// the file. A file that cannot be read is skipped (exit 2); a failure to
// write stops it (exit 4), and so does a q or Q with a nonzero code.
func (run *sedRun) separately(p *proc, name string, a sedArgs) int {
	code := 0
	for _, f := range a.operands {
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
		if !a.inPlace {
			p.stdout.Write(out.Bytes())
		} else if err := writeInPlace(path, a.suffix, data, out.Bytes()); err != nil {
			return p.fail(4, name, "%v", err)
		}
		if c != 0 {
			return c
		}
		run.line = 0
	}
	return code
}

// writeInPlace replaces the file at path by edited, keeping its mode, after
// saving the original data to a backup named by suffix when there is one:
// path+suffix, or suffix with * as the file's base name (in the file's
// directory unless it names one).
func writeInPlace(path, suffix string, data, edited []byte) error {
	if suffix != "" {
		bak := strings.ReplaceAll(suffix, "*", filepath.Base(path))
		if !strings.Contains(suffix, "*") {
			bak = path + suffix
		} else if !strings.Contains(bak, "/") {
			bak = filepath.Join(filepath.Dir(path), bak)
		}
		if err := os.WriteFile(bak, data, 0o644); err != nil {
			return err
		}
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return os.WriteFile(path, edited, mode)
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

// parseSed parses a sed script into its commands, a { jumping past its }
// when its address does not match, and b, t and T jumping to their label's
// : or, without one, to the end.
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
		c, err := ps.command()
		if err != nil {
			return nil, err
		}
		switch c.name {
		case '{':
			open = append(open, len(cmds))
		case '}':
			if len(open) == 0 {
				return nil, errors.New("unexpected }")
			}
			cmds[open[len(open)-1]].jump = len(cmds) + 1
			open = open[:len(open)-1]
		case ':':
			labels[c.text] = len(cmds)
		}
		cmds = append(cmds, c)
	}
	if len(open) > 0 {
		return nil, errors.New("unmatched `{'")
	}
	if err := resolveJumps(cmds, labels); err != nil {
		return nil, err
	}
	return cmds, nil
}

// command parses one command: its addresses, !, its name and what follows
// the name. Braces and jumps are left for parseSed to match.
func (ps *sedParser) command() (*sedCmd, error) {
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
	if err := ps.operands(c); err != nil {
		return nil, err
	}
	return c, nil
}

// operands parses what follows the command c's name: q's exit code, the
// text of a, i and c, a label, s's and y's arguments.
func (ps *sedParser) operands(c *sedCmd) error {
	switch c.name {
	case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z':
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
		if c.name == ':' && c.text == "" {
			return errors.New("\":\" lacks a label")
		}
	case 's':
		return ps.subst(c)
	case 'y':
		d, err := ps.delim()
		if err != nil {
			return err
		}
		from, err1 := ps.until(d)
		to, err2 := ps.until(d)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		c.from, c.to = []rune(unescape(from)), []rune(unescape(to))
		if len(c.from) != len(c.to) {
			return errors.New("strings for `y' command are different lengths")
		}
	default:
		return fmt.Errorf("unknown command: `%c'", c.name)
	}
	return nil
}

// resolveJumps points each b, t and T at its label's command, or past the
// last command when it names none.
func resolveJumps(cmds []*sedCmd, labels map[string]int) error {
	for _, c := range cmds {
		if c.name == 'b' || c.name == 't' || c.name == 'T' {
			c.jump = len(cmds)
			if c.text != "" {
				j, ok := labels[c.text]
				if !ok {
					return fmt.Errorf("can't find label for jump to `%s'", c.text)
				}
				c.jump = j
			}
		}
	}
	return nil
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
	st := &sedStream{sedRun: s, br: bufio.NewReaderSize(r, 64<<10), w: w}
	st.pending, st.pendNL, st.ok = st.next()
	var more bool
	st.ps, st.nl, more = st.read()
	for more {
		cy := st.cycle()
		if !cy.deleted && !s.quiet {
			st.out(st.ps, st.nl || !st.last())
		}
		st.flush()
		if cy.quit {
			return max(cy.exit, 0), nil
		}
		if cy.restart {
			continue
		}
		st.ps, st.nl, more = st.read()
	}
	return 0, nil
}

// sedStream is one run of the program over one input: the input read a line
// ahead (so that $ knows the last line), the pattern and hold spaces, and
// the text that a queued for the end of the cycle.
type sedStream struct {
	*sedRun
	br      *bufio.Reader
	w       io.Writer
	pending string // the next line
	pendNL  bool   // whether it ended in a newline
	ok      bool   // whether there is a next line
	ps      string // the pattern space
	nl      bool   // whether its last line ended in a newline
	hold    string
	appendQ []string
}

// sedCycle is how one cycle of the program ended.
type sedCycle struct {
	substituted bool // an s replaced something since the last t or T
	deleted     bool // the pattern space is not printed
	quit        bool // q or Q: sed exits with exit (when not -1)
	exit        int
	restart     bool // D: the next cycle starts without reading a line
}

// next reads a line from the input: the line without its newline, whether
// it had one, and whether there was a line.
func (st *sedStream) next() (string, bool, bool) {
	l, err := st.br.ReadString('\n')
	if l == "" && err != nil {
		return "", false, false
	}
	return strings.TrimSuffix(l, "\n"), strings.HasSuffix(l, "\n"), true
}

// read takes the line read ahead, counts it and reads the one after.
func (st *sedStream) read() (string, bool, bool) {
	if !st.ok {
		return "", false, false
	}
	l, nl := st.pending, st.pendNL
	st.pending, st.pendNL, st.ok = st.next()
	st.line++
	return l, nl, true
}

// last reports whether the line read is the input's last.
func (st *sedStream) last() bool { return !st.ok }

// out writes text, and a newline when nl.
func (st *sedStream) out(text string, nl bool) {
	io.WriteString(st.w, text)
	if nl {
		io.WriteString(st.w, "\n")
	}
}

// flush writes the text that a queued.
func (st *sedStream) flush() {
	for _, a := range st.appendQ {
		st.out(a, true)
	}
	st.appendQ = st.appendQ[:0]
}

// cycle runs the program once over the pattern space: each command whose
// address matches, the branches moving the program counter, until the
// program ends or a command ends the cycle.
func (st *sedStream) cycle() sedCycle {
	cy := sedCycle{exit: -1}
	for pc := 0; pc < len(st.prog); pc++ {
		c := st.prog[pc]
		if !st.matches(c, st.ps, st.last()) {
			if c.name == '{' {
				pc = c.jump - 1
			}
			continue
		}
		switch c.name {
		case 'b':
			pc = c.jump - 1
		case 't', 'T':
			if cy.substituted == (c.name == 't') {
				cy.substituted = false
				pc = c.jump - 1
			}
		case 'c', 'd', 'D', 'n', 'N', 'q', 'Q':
			if st.control(c, &cy) {
				return cy
			}
		default:
			st.edit(c, &cy)
		}
	}
	return cy
}

// control runs a command that may end the cycle (c, d, D, q, Q) or reads
// input (n, N), and reports whether the cycle ends.
func (st *sedStream) control(c *sedCmd, cy *sedCycle) bool {
	switch c.name {
	case 'c':
		if c.a2.kind == 0 || !c.active {
			st.out(c.text, true)
		}
		cy.deleted = true
		return true
	case 'd':
		cy.deleted = true
		return true
	case 'D':
		if i := strings.IndexByte(st.ps, '\n'); i >= 0 {
			st.ps = st.ps[i+1:]
			cy.restart = true
		} else {
			cy.deleted = true
		}
		return true
	case 'n':
		if !st.quiet {
			st.out(st.ps, st.nl)
		}
		st.flush()
		l, lnl, ok := st.read()
		if !ok {
			cy.deleted = true // already printed
			return true
		}
		st.ps, st.nl = l, lnl
	case 'N':
		l, lnl, ok := st.read()
		if !ok {
			return true // GNU prints the pattern space
		}
		st.ps, st.nl = st.ps+"\n"+l, lnl
	case 'q':
		cy.quit, cy.exit = true, c.exit
		return true
	case 'Q':
		cy.quit, cy.exit, cy.deleted = true, c.exit, true
		return true
	}
	return false
}

// edit runs a command that changes the pattern or hold space or writes
// output and lets the cycle go on; s records a substitution in cy.
func (st *sedStream) edit(c *sedCmd, cy *sedCycle) {
	switch c.name {
	case '{', '}', ':':
	case '=':
		fmt.Fprintf(st.w, "%d\n", st.line)
	case 'a':
		st.appendQ = append(st.appendQ, c.text)
	case 'i':
		st.out(c.text, true)
	case 'g':
		st.ps = st.hold
	case 'G':
		st.ps += "\n" + st.hold
	case 'h':
		st.hold = st.ps
	case 'H':
		st.hold += "\n" + st.ps
	case 'x':
		st.ps, st.hold = st.hold, st.ps
	case 'z':
		st.ps = ""
	case 'p':
		st.out(st.ps, true)
	case 'P':
		first, _, _ := strings.Cut(st.ps, "\n")
		st.out(first, true)
	case 's':
		if r, ok := substitute(c, st.ps); ok {
			st.ps, cy.substituted = r, true
			if c.print {
				st.out(st.ps, true)
			}
		}
	case 'y':
		st.ps = strings.Map(func(r rune) rune {
			for i, f := range c.from {
				if f == r {
					return c.to[i]
				}
			}
			return r
		}, st.ps)
	}
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
