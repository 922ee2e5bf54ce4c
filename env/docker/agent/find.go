package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runFind is find: find [PATH]... [EXPRESSION], GNU's common subset: tests
// -name -iname -path -ipath -wholename -type -empty -newer -size -true
// -false, operators ! -not -a -and -o -or ( ), options -maxdepth -mindepth,
// actions -print -print0 -prune -delete -exec CMD {} ; and -exec CMD {} +.
// Without an action, what matches is printed.
func runFind(p *proc, name string, args []string) int {
	i := 0
	var roots []string
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 || a == "!" || a == "(" {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	f := &finder{p: p, args: args[i:], maxDepth: -1}
	expr, err := f.parse()
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	if expr == nil {
		expr = func(*findEntry) bool { return true }
	}
	if !f.hasAction {
		e := expr
		expr = func(x *findEntry) bool {
			if e(x) {
				fmt.Fprintln(p.stdout, x.path)
			}
			return true
		}
	}
	ok := true
	for _, root := range roots {
		err := filepath.WalkDir(p.path(root), func(full string, d fs.DirEntry, err error) error {
			// The depth counts the components below the root: WalkDir
			// names the entries under "." without a leading "./".
			rel, depth := root, 0
			if under, rerr := filepath.Rel(p.path(root), full); rerr == nil && under != "." {
				depth = strings.Count(under, string(filepath.Separator)) + 1
				rel = filepath.Join(root, under)
				if strings.HasPrefix(root, "./") || root == "." {
					rel = "./" + strings.TrimPrefix(rel, "./")
				}
			}
			if err != nil {
				p.fail(1, name, "%v", err)
				ok = false
				return nil
			}
			x := &findEntry{path: rel, full: full, d: d, depth: depth}
			if depth >= f.minDepth {
				expr(x)
			}
			if d.IsDir() && (x.prune || (f.maxDepth >= 0 && depth >= f.maxDepth)) {
				return filepath.SkipDir
			}
			if x.deleteMe {
				if err := os.Remove(full); err != nil {
					p.fail(1, name, "%v", err)
					ok = false
				}
			}
			return nil
		})
		if err != nil {
			p.fail(1, name, "%v", err)
			ok = false
		}
	}
	if !f.flush() {
		ok = false
	}
	return status(ok)
}

type findEntry struct {
	path, full      string
	d               fs.DirEntry
	depth           int
	prune, deleteMe bool
}

type findExpr func(*findEntry) bool

type finder struct {
	p                  *proc
	args               []string
	i                  int
	maxDepth, minDepth int
	hasAction          bool
	batches            []*findBatch
}

// findBatch is an -exec CMD {} + and the paths it has collected.
type findBatch struct {
	argv  []string
	paths []string
}

func (f *finder) flush() bool {
	ok := true
	for _, b := range f.batches {
		if len(b.paths) == 0 {
			continue
		}
		var argv []string
		for _, a := range b.argv {
			if a == "{}" {
				argv = append(argv, b.paths...)
			} else {
				argv = append(argv, a)
			}
		}
		ok = f.run(argv) && ok
	}
	return ok
}

func (f *finder) run(argv []string) bool {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Dir = f.p.stdin, f.p.stdout, f.p.stderr, f.p.dir
	return cmd.Run() == nil
}

func (f *finder) next() (string, bool) {
	if f.i >= len(f.args) {
		return "", false
	}
	f.i++
	return f.args[f.i-1], true
}

func (f *finder) parse() (findExpr, error) {
	if len(f.args) == 0 {
		return nil, nil
	}
	e, err := f.or()
	if err != nil {
		return nil, err
	}
	if f.i < len(f.args) {
		return nil, fmt.Errorf("unexpected %q", f.args[f.i])
	}
	return e, nil
}

func (f *finder) or() (findExpr, error) {
	l, err := f.and()
	if err != nil {
		return nil, err
	}
	for f.i < len(f.args) && (f.args[f.i] == "-o" || f.args[f.i] == "-or") {
		f.i++
		r, err := f.and()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(x *findEntry) bool { return a(x) || b(x) }
	}
	return l, nil
}

func (f *finder) and() (findExpr, error) {
	l, err := f.unary()
	if err != nil {
		return nil, err
	}
	for f.i < len(f.args) && f.args[f.i] != "-o" && f.args[f.i] != "-or" && f.args[f.i] != ")" {
		if f.args[f.i] == "-a" || f.args[f.i] == "-and" {
			f.i++
		}
		r, err := f.unary()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(x *findEntry) bool { return a(x) && b(x) }
	}
	return l, nil
}

func (f *finder) unary() (findExpr, error) {
	tok, ok := f.next()
	if !ok {
		return nil, errors.New("expected an expression")
	}
	switch tok {
	case "!", "-not":
		e, err := f.unary()
		if err != nil {
			return nil, err
		}
		return func(x *findEntry) bool { return !e(x) }, nil
	case "(":
		e, err := f.or()
		if err != nil {
			return nil, err
		}
		if t, _ := f.next(); t != ")" {
			return nil, errors.New("missing )")
		}
		return e, nil
	}
	return f.primary(tok)
}

// arg reads the argument of the primary tok.
func (f *finder) arg(tok string) (string, error) {
	v, ok := f.next()
	if !ok {
		return "", fmt.Errorf("missing argument to `%s'", tok)
	}
	return v, nil
}

// findTrue and findFalse are -true and -false.
func findTrue(*findEntry) bool  { return true }
func findFalse(*findEntry) bool { return false }

// primary parses the primary tok (a test, an option or an action) and
// whatever arguments it takes.
func (f *finder) primary(tok string) (findExpr, error) {
	switch tok {
	case "-name", "-iname", "-path", "-ipath", "-wholename":
		return f.nameTest(tok)
	case "-type":
		return f.typeTest(tok)
	case "-maxdepth", "-mindepth":
		return f.depthOption(tok)
	case "-empty":
		return isEmpty, nil
	case "-newer":
		return f.newerTest(tok)
	case "-mmin", "-mtime":
		return f.ageTest(tok)
	case "-size":
		return f.sizeTest(tok)
	case "-true":
		return findTrue, nil
	case "-false":
		return findFalse, nil
	case "-print", "-print0":
		f.hasAction = true
		end := "\n"
		if tok == "-print0" {
			end = "\x00"
		}
		return func(x *findEntry) bool { fmt.Fprint(f.p.stdout, x.path+end); return true }, nil
	case "-prune":
		return func(x *findEntry) bool { x.prune = true; return true }, nil
	case "-delete":
		f.hasAction = true
		return func(x *findEntry) bool { x.deleteMe = true; return true }, nil
	case "-exec", "-execdir", "-ok":
		f.hasAction = true
		return f.execAction(tok)
	}
	return nil, fmt.Errorf("unknown predicate `%s'", tok)
}

// nameTest is -name, -iname (the base name) and -path, -ipath, -wholename
// (the whole path), the i forms folding case.
func (f *finder) nameTest(tok string) (findExpr, error) {
	pat, err := f.arg(tok)
	if err != nil {
		return nil, err
	}
	fold := tok == "-iname" || tok == "-ipath"
	if fold {
		pat = strings.ToLower(pat)
	}
	if _, err := filepath.Match(pat, ""); err != nil {
		return nil, err
	}
	return func(x *findEntry) bool {
		s := x.path
		if tok == "-name" || tok == "-iname" {
			s = filepath.Base(x.path)
		}
		if fold {
			s = strings.ToLower(s)
		}
		ok, _ := matchPath(pat, s, tok != "-name" && tok != "-iname")
		return ok
	}, nil
}

// typeTest is -type T[,T]...: f, d, l, p or s.
func (f *finder) typeTest(tok string) (findExpr, error) {
	t, err := f.arg(tok)
	if err != nil {
		return nil, err
	}
	return func(x *findEntry) bool {
		m := x.d.Type()
		for _, c := range strings.Split(t, ",") {
			switch {
			case c == "f" && m.IsRegular(), c == "d" && m.IsDir(), c == "l" && m&fs.ModeSymlink != 0,
				c == "p" && m&fs.ModeNamedPipe != 0, c == "s" && m&fs.ModeSocket != 0:
				return true
			}
		}
		return false
	}, nil
}

// depthOption is -maxdepth and -mindepth: it sets the walk's bounds and
// is always true.
func (f *finder) depthOption(tok string) (findExpr, error) {
	v, err := f.arg(tok)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s: invalid argument %q", tok, v)
	}
	if tok == "-maxdepth" {
		f.maxDepth = n
	} else {
		f.minDepth = n
	}
	return findTrue, nil
}

// isEmpty is -empty: an empty directory or an empty regular file.
func isEmpty(x *findEntry) bool {
	if x.d.IsDir() {
		ents, err := os.ReadDir(x.full)
		return err == nil && len(ents) == 0
	}
	fi, err := x.d.Info()
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// newerTest is -newer FILE: modified after FILE, which is read now.
func (f *finder) newerTest(tok string) (findExpr, error) {
	ref, err := f.arg(tok)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(f.p.path(ref))
	if err != nil {
		return nil, err
	}
	t := fi.ModTime()
	return func(x *findEntry) bool {
		fi, err := x.d.Info()
		return err == nil && fi.ModTime().After(t)
	}, nil
}

// ageTest is -mmin and -mtime [+-]N: the age in minutes or days.
func (f *finder) ageTest(tok string) (findExpr, error) {
	v, err := f.arg(tok)
	if err != nil {
		return nil, err
	}
	unit := time.Minute
	if tok == "-mtime" {
		unit = 24 * time.Hour
	}
	cmp, n, err := signedNumber(v)
	if err != nil {
		return nil, err
	}
	return func(x *findEntry) bool {
		fi, err := x.d.Info()
		if err != nil {
			return false
		}
		age := int64(time.Since(fi.ModTime()) / unit)
		return compare(cmp, age, n)
	}, nil
}

// sizeTest is -size [+-]N[ckMGb]: the size rounded up to the unit, 512
// bytes when none is given.
func (f *finder) sizeTest(tok string) (findExpr, error) {
	v, err := f.arg(tok)
	if err != nil {
		return nil, err
	}
	unit := int64(512)
	if l := v[len(v)-1]; l < '0' || l > '9' {
		unit = map[byte]int64{'c': 1, 'k': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'b': 512}[l]
		if unit == 0 {
			return nil, fmt.Errorf("-size: invalid unit in %q", v)
		}
		v = v[:len(v)-1]
	}
	cmp, n, err := signedNumber(v)
	if err != nil {
		return nil, err
	}
	return func(x *findEntry) bool {
		fi, err := x.d.Info()
		if err != nil {
			return false
		}
		return compare(cmp, (fi.Size()+unit-1)/unit, n)
	}, nil
}

// execAction is -exec CMD ;, which runs CMD once per path with {}
// replaced, and -exec CMD {} +, which collects the paths for flush.
// -execdir and -ok are taken as -exec.
func (f *finder) execAction(tok string) (findExpr, error) {
	var argv []string
	for {
		a, ok := f.next()
		if !ok {
			return nil, fmt.Errorf("missing argument to `%s'", tok)
		}
		if a == ";" {
			break
		}
		if a == "+" && len(argv) > 0 && argv[len(argv)-1] == "{}" {
			b := &findBatch{argv: argv}
			f.batches = append(f.batches, b)
			return func(x *findEntry) bool { b.paths = append(b.paths, x.path); return true }, nil
		}
		argv = append(argv, a)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: no command", tok)
	}
	return func(x *findEntry) bool {
		cmd := make([]string, len(argv))
		for i, a := range argv {
			cmd[i] = strings.ReplaceAll(a, "{}", x.path)
		}
		return f.run(cmd)
	}, nil
}

// matchPath is filepath.Match, where a whole-path pattern's * also matches
// across slashes, as find's -path does.
func matchPath(pat, s string, whole bool) (bool, error) {
	if !whole {
		return filepath.Match(pat, s)
	}
	re := "^"
	for _, c := range pat {
		switch c {
		case '*':
			re += ".*"
		case '?':
			re += "."
		default:
			re += regexpQuote(string(c))
		}
	}
	r, err := compileRE(re+"$", true, false)
	if err != nil {
		return false, err
	}
	return r.MatchString(s), nil
}

func regexpQuote(s string) string {
	if strings.ContainsAny(s, `\.+()|[]{}^$*?`) {
		return `\` + s
	}
	return s
}

// signedNumber parses find's +N (more than), -N (less than) and N (exactly).
func signedNumber(v string) (byte, int64, error) {
	cmp := byte('=')
	if v != "" && (v[0] == '+' || v[0] == '-') {
		cmp, v = v[0], v[1:]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid number %q", v)
	}
	return cmp, n, nil
}

func compare(cmp byte, v, n int64) bool {
	switch cmp {
	case '+':
		return v > n
	case '-':
		return v < n
	}
	return v == n
}

// runMktemp is mktemp: mktemp [-d] [-u] [-p DIR | -t] [TEMPLATE], the
// template ending in X's (default tmp.XXXXXXXXXX in $TMPDIR or /tmp).
func runMktemp(p *proc, name string, args []string) int {
	dirMode, dryRun, base := false, false, ""
	template := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-d" || a == "--directory":
			dirMode = true
		case a == "-u" || a == "--dry-run":
			dryRun = true
		case a == "-q" || a == "-t":
		case a == "-p" && i+1 < len(args):
			base = args[i+1]
			i++
		case strings.HasPrefix(a, "--tmpdir="):
			base = strings.TrimPrefix(a, "--tmpdir=")
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'd':
					dirMode = true
				case 'u':
					dryRun = true
				case 'q', 't':
				default:
					return p.fail(1, name, "invalid option -%c", c)
				}
			}
		default:
			template = a
		}
	}
	if template == "" {
		template = "tmp.XXXXXXXXXX"
	}
	if base == "" && !strings.Contains(template, "/") {
		if base = os.Getenv("TMPDIR"); base == "" {
			base = "/tmp"
		}
	}
	x := len(template) - len(strings.TrimRight(template, "X"))
	if x < 3 {
		return p.fail(1, name, "too few X's in template %q", template)
	}
	dir, pat := filepath.Split(filepath.Join(base, template))
	pat = pat[:len(pat)-x] + "*"
	if base == "" && !filepath.IsAbs(dir) {
		dir = p.path(dir)
	}
	var path string
	var err error
	if dirMode {
		path, err = os.MkdirTemp(dir, pat)
	} else {
		var f *os.File
		if f, err = os.CreateTemp(dir, pat); err == nil {
			path = f.Name()
			f.Close()
		}
	}
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	if dryRun {
		os.Remove(path)
	}
	fmt.Fprintln(p.stdout, path)
	return 0
}
