package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runTool runs a tool in process in dir with stdin, and returns its output
// and exit code.
func runTool(t *testing.T, dir, stdin string, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	run := tools[argv[0]]
	if run == nil {
		t.Fatalf("no tool %q", argv[0])
	}
	var out, errb bytes.Buffer
	code = run(&proc{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, dir: dir}, argv[0], argv[1:])
	return out.String(), errb.String(), code
}

// tree writes files (name: content) under a new temporary directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTools: the tools an agent reaches for behave as GNU's and busybox's
// do on the cases that agents and frog's own commands use.
func TestTools(t *testing.T) {
	dir := tree(t, map[string]string{
		"a.go":     "package a\n\nfunc F(x int) int {\n\treturn x + 1 // (inc)\n}\n",
		"d/b.go":   "package d\n\nvar B = \"foo(bar)\"\n",
		"d/c.txt":  "one\ntwo\nthree\nfour\nfive\n",
		"new.go":   "package a\n\nfunc F(x int) int {\n\treturn x - 1 // (dec)\n}\n",
		"nonl.txt": "x\ny",
	})
	tests := []struct {
		argv  []string
		stdin string
		out   string
		code  int
	}{
		{[]string{"grep", "-rn", "--", "foo(", "."}, "", "./d/b.go:3:var B = \"foo(bar)\"\n", 0},
		{[]string{"grep", "-rn", "--", "x + 1", "."}, "", "./a.go:4:\treturn x + 1 // (inc)\n", 0},
		{[]string{"grep", "-rn", "--", "nothing here", "."}, "", "", 1},
		{[]string{"grep", "-n", `t\(wo\|hree\)`, "d/c.txt"}, "", "2:two\n3:three\n", 0},
		{[]string{"grep", "-E", "-c", "^f(our|ive)$", "d/c.txt"}, "", "2\n", 0},
		{[]string{"grep", "-F", "-x", "two", "d/c.txt"}, "", "two\n", 0},
		{[]string{"grep", "-rl", "--include=*.go", "package", "."}, "", "./a.go\n./d/b.go\n./new.go\n", 0},
		{[]string{"grep", "-iw", "ONE", "d/c.txt"}, "", "one\n", 0},
		{[]string{"grep", "-v", "o", "d/c.txt"}, "", "three\nfive\n", 0},
		{[]string{"grep", "-A1", "two", "d/c.txt"}, "", "two\nthree\n", 0},
		{[]string{"grep", "-q", "two", "d/c.txt"}, "", "", 0},
		{[]string{"grep", "x", "no-such-file"}, "", "", 2},
		{[]string{"grep", "-m", "x", "two", "d/c.txt"}, "", "", 2}, // not a number: an error, not -m 0
		{[]string{"grep", "-C", "-1", "two", "d/c.txt"}, "", "", 2},
		{[]string{"grep", "-m", "1", "o", "d/c.txt"}, "", "one\n", 0},
		{[]string{"sed", "-n", "2,3p", "d/c.txt"}, "", "two\nthree\n", 0},
		{[]string{"sed", "s/o/0/g;3d", "d/c.txt"}, "", "0ne\ntw0\nf0ur\nfive\n", 0},
		{[]string{"sed", "-E", `s/(t)(w|h)/\2\1/`, "d/c.txt"}, "", "one\nwto\nhtree\nfour\nfive\n", 0},
		{[]string{"sed", "/^t/,/^f/d", "d/c.txt"}, "", "one\nfive\n", 0},
		{[]string{"sed", "-e", "1i top", "-e", "$a end", "-e", "2,4!d", "d/c.txt"}, "", "top\ntwo\nthree\nfour\nend\n", 0}, // a queued text is written also when the line is deleted
		{[]string{"sed", "-n", "$=", "d/c.txt"}, "", "5\n", 0},
		{[]string{"sed", "2q", "d/c.txt"}, "", "one\ntwo\n", 0},
		{[]string{"sed", "y/abc/xyz/"}, "aabbcc\n", "xxyyzz\n", 0},
		{[]string{"sed", "s|/|_|g"}, "a/b/c\n", "a_b_c\n", 0},
		{[]string{"sed", "-n", "/two/{n;p}", "d/c.txt"}, "", "three\n", 0},
		{[]string{"sed", "$!N;s/\\n/+/"}, "1\n2\n3\n", "1+2\n3\n", 0},
		{[]string{"sed", "s/x/X/"}, "x", "X", 0},
		{[]string{"diff", "a.go", "a.go"}, "", "", 0},
		{[]string{"diff", "a.go", "new.go"}, "", "4c4\n< \treturn x + 1 // (inc)\n---\n> \treturn x - 1 // (dec)\n", 1},
		{[]string{"diff", "-u", "a.go", "new.go"}, "", "--- a.go\n+++ new.go\n@@ -1,5 +1,5 @@\n package a\n \n func F(x int) int {\n-\treturn x + 1 // (inc)\n+\treturn x - 1 // (dec)\n }\n", 1},
		{[]string{"diff", "-U1", "d/c.txt", "-"}, "one\ntwo\n3\nfour\nfive\nsix\n", "--- d/c.txt\n+++ -\n@@ -2,4 +2,5 @@\n two\n-three\n+3\n four\n five\n+six\n", 1},
		{[]string{"diff", "nonl.txt", "-"}, "x\ny\n", "2c2\n< y\n\\ No newline at end of file\n---\n> y\n", 1},
		{[]string{"diff", "a.go", "missing"}, "", "", 2},
		{[]string{"head", "-n", "2", "d/c.txt"}, "", "one\ntwo\n", 0},
		{[]string{"head", "-3"}, "1\n2\n3\n4\n", "1\n2\n3\n", 0},
		{[]string{"head", "-c", "5", "d/c.txt"}, "", "one\nt", 0},
		{[]string{"tail", "-n", "2", "d/c.txt"}, "", "four\nfive\n", 0},
		{[]string{"tail", "-n", "+4", "d/c.txt"}, "", "four\nfive\n", 0},
		{[]string{"wc", "-l", "d/c.txt"}, "", "5 d/c.txt\n", 0},
		{[]string{"wc", "-l"}, "a\nb\n", "2\n", 0},
		{[]string{"wc"}, "a b\nc\n", "      2       3       6\n", 0},
		{[]string{"wc", "d/c.txt"}, "", " 5  5 24 d/c.txt\n", 0},
		{[]string{"sort", "-r"}, "b\nc\na\n", "c\nb\na\n", 0},
		{[]string{"sort", "-n", "-k", "2"}, "x 10\ny 9\n", "y 9\nx 10\n", 0},
		{[]string{"sort", "-u"}, "b\na\nb\n", "a\nb\n", 0},
		{[]string{"uniq", "-c"}, "a\na\nb\n", "      2 a\n      1 b\n", 0},
		{[]string{"cut", "-d", ":", "-f", "1,3"}, "a:b:c\n", "a:c\n", 0},
		{[]string{"cut", "-c", "2-3"}, "abcd\n", "bc\n", 0},
		{[]string{"tr", "a-z", "A-Z"}, "hi there\n", "HI THERE\n", 0},
		{[]string{"tr", "-d", "[:digit:]"}, "a1b22\n", "ab\n", 0},
		{[]string{"seq", "3"}, "", "1\n2\n3\n", 0},
		{[]string{"seq", "-s", ",", "2", "2", "6"}, "", "2,4,6\n", 0},
		{[]string{"tac"}, "1\n2\n", "2\n1\n", 0},
		{[]string{"basename", "/a/b.go", ".go"}, "", "b\n", 0},
		{[]string{"dirname", "/a/b.go"}, "", "/a\n", 0},
		{[]string{"echo", "-n", "a", "b"}, "", "a b", 0},
		{[]string{"printf", "%s=%d\\n", "x", "3"}, "", "x=3\n", 0},
		{[]string{"test", "-f", "a.go"}, "", "", 0},
		{[]string{"[", "-d", "a.go", "]"}, "", "", 1},
		{[]string{"true"}, "", "", 0},
		{[]string{"false"}, "", "", 1},
		{[]string{"cat", "d/c.txt"}, "", "one\ntwo\nthree\nfour\nfive\n", 0},
		{[]string{"sha256sum", "-"}, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n", 0},
		{[]string{"sh", "-c", `echo "$0:$1:$#"`, "name", "a b"}, "", "name:a b:1\n", 0},
		{[]string{"sh", "-c", "cd d && exec env A=B sh -c 'echo $A; cat c.txt | head -1'"}, "", "B\none\n", 0},
		{[]string{"sh", "-c", "echo oops >&2; exit 3"}, "", "", 3},
		{[]string{"sh", "-c", "for f in one two; do grep -c $f d/c.txt; done"}, "", "1\n1\n", 0},
		{[]string{"sh"}, "x=5; echo $((x * 2))\n", "10\n", 0},
		{[]string{"sh", "-c", "frog-no-such-command"}, "", "", 127},
		{[]string{"env", "-i", "A=1", "B=2"}, "", "A=1\nB=2\n", 0},
		{[]string{"find", ".", "-name", "*.go"}, "", "./a.go\n./d/b.go\n./new.go\n", 0},
		{[]string{"find", "d", "-type", "f", "-name", "*.txt"}, "", "d/c.txt\n", 0},
		{[]string{"find", ".", "-maxdepth", "1", "-type", "d"}, "", ".\n./d\n", 0},
		{[]string{"find", ".", "-path", "./d", "-prune", "-o", "-name", "*.go", "-print"}, "", "./a.go\n./new.go\n", 0},
		{[]string{"find", ".", "-type", "f", "!", "-name", "*.go", "-size", "-2k"}, "", "./d/c.txt\n./nonl.txt\n", 0},
		{[]string{"find", "d", "-name", "*.go", "-exec", "grep", "-c", "foo", "{}", ";"}, "", "1\n", 0},
		{[]string{"find", ".", "-name", "x", "-o", "-name", "b.go"}, "", "./d/b.go\n", 0},
		{[]string{"find", "nowhere"}, "", "", 1},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			if tc.argv[0] == "sh" || tc.argv[0] == "find" {
				// sh runs the other tools as programs: it needs them on
				// PATH, which the image has and a test binary has not.
				t.Setenv("PATH", toolPath(t))
			}
			out, errOut, code := runTool(t, dir, tc.stdin, tc.argv...)
			if diff := cmp.Diff(tc.out, out); diff != "" || code != tc.code {
				t.Errorf("exit %d (want %d), stdout (-want +got):\n%s\nstderr: %s", code, tc.code, diff, errOut)
			}
		})
	}
}

// TestFindDepth: -mindepth and -maxdepth count from the starting point,
// also when find runs as a program of its own in the directory (no
// working directory of an interpreter to resolve against), as commands in
// a sandbox run it.
func TestFindDepth(t *testing.T) {
	dir := tree(t, map[string]string{"a.go": "", "d/b.go": "", "d/e/c.go": ""})
	tests := []struct {
		argv []string
		out  string
	}{
		{[]string{"find", ".", "-mindepth", "1", "-maxdepth", "1"}, "./a.go\n./d\n"},
		{[]string{"find", ".", "-mindepth", "2"}, "./d/b.go\n./d/e\n./d/e/c.go\n"},
		{[]string{"find", ".", "-maxdepth", "1", "-type", "d"}, ".\n./d\n"},
		{[]string{"find", "d", "-mindepth", "1", "-maxdepth", "1"}, "d/b.go\nd/e\n"},
		{[]string{"find", "d/", "-mindepth", "2"}, "d/e/c.go\n"},
	}
	for _, tc := range tests {
		for _, inDir := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/dir=%v", strings.Join(tc.argv, " "), inDir), func(t *testing.T) {
				d := dir
				if !inDir {
					t.Chdir(dir)
					d = ""
				}
				out, errOut, code := runTool(t, d, "", tc.argv...)
				if diff := cmp.Diff(tc.out, out); diff != "" || code != 0 {
					t.Errorf("exit %d, stdout (-want +got):\n%s\nstderr: %s", code, diff, errOut)
				}
			})
		}
	}
}

// TestSedInPlace: sed -i edits the file and keeps its mode; -i.bak keeps a
// copy.
func TestSedInPlace(t *testing.T) {
	dir := tree(t, map[string]string{"f.go": "a := 1\nb := 2\n"})
	os.Chmod(filepath.Join(dir, "f.go"), 0o600)
	if _, errOut, code := runTool(t, dir, "", "sed", "-i.bak", "s/2/3/", "f.go"); code != 0 {
		t.Fatalf("sed -i: exit %d: %s", code, errOut)
	}
	for name, want := range map[string]string{"f.go": "a := 1\nb := 3\n", "f.go.bak": "a := 1\nb := 2\n"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "f.go")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after sed -i = %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestCompileRE: POSIX basic and extended expressions in RE2.
func TestCompileRE(t *testing.T) {
	tests := []struct {
		re       string
		extended bool
		match    []string
		noMatch  []string
	}{
		{`foo(`, false, []string{"foo(x"}, []string{"foo"}},
		{`a\{2\}`, false, []string{"aa"}, []string{"a"}},
		{`a{2}`, false, []string{"a{2}"}, []string{"aa"}},
		{`a+`, false, []string{"a+"}, []string{"aa"}},
		{`a\+`, false, []string{"aaa"}, []string{"b"}},
		{`*x`, false, []string{"*x"}, []string{"x"}},
		{`^*x`, false, []string{"*x"}, []string{"x"}},
		{`\<go\>`, false, []string{"a go b"}, []string{"gopher"}},
		{`[[:digit:]]\+`, false, []string{"x12"}, []string{"xy"}},
		{`[a\]`, false, []string{`\`}, []string{"b"}},
		{`(a|b)+`, true, []string{"ab"}, []string{"c"}},
		{`x{`, true, []string{"x{"}, []string{"x"}},
	}
	for _, tc := range tests {
		re, err := compileRE(tc.re, tc.extended, false)
		if err != nil {
			t.Errorf("compileRE(%q, %v): %v", tc.re, tc.extended, err)
			continue
		}
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Errorf("%q (extended %v) as %q does not match %q", tc.re, tc.extended, re, s)
			}
		}
		for _, s := range tc.noMatch {
			if re.MatchString(s) {
				t.Errorf("%q (extended %v) as %q matches %q", tc.re, tc.extended, re, s)
			}
		}
	}
	if _, err := compileRE(`\(a\)\1`, false, false); err == nil {
		t.Errorf("a back-reference compiled; want an error")
	}
}

// toolPath builds this package once and links every tool to it in a
// directory, the image's /bin in small, and returns the directory.
func toolPath(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "frog-agent-tools-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		binErr = buildSelf(filepath.Join(dir, "agent"))
		for _, n := range toolNames() {
			if binErr == nil {
				binErr = os.Symlink("agent", filepath.Join(dir, n))
			}
		}
	})
	if binErr != nil {
		t.Fatalf("build the agent: %v", binErr)
	}
	return binDir
}

func TestMktemp(t *testing.T) {
	dir := t.TempDir()
	for _, argv := range [][]string{{"mktemp", "-d", filepath.Join(dir, "l.XXXX")}, {"mktemp", "-p", dir}, {"mktemp", "-d", "-p", dir, "x.XXXXXX"}} {
		out, errOut, code := runTool(t, "", "", argv...)
		p := strings.TrimSpace(out)
		if code != 0 || !strings.HasPrefix(p, dir+"/") {
			t.Errorf("%q: %q, exit %d, %s; want a new path in %s", argv, out, code, errOut, dir)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() != (argv[1] == "-d") {
			t.Errorf("%q made %s: %v, %v", argv, p, fi, err)
		}
	}
	if _, _, code := runTool(t, "", "", "mktemp", filepath.Join(dir, "noX")); code == 0 {
		t.Errorf("mktemp with no X's succeeded")
	}
}
