package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// runLn is ln: ln [-sfnT] TARGET LINK, or ln [-sf] TARGET... DIR.
func runLn(p *proc, name string, args []string) int {
	opts, ops, err := getopt(args, "sfnTv", []string{"symbolic", "force", "no-dereference"}, true)
	if err != nil {
		return p.fail(1, name, "%v", err)
	}
	sym, force := false, false
	for _, o := range opts {
		switch o.name {
		case "s", "symbolic":
			sym = true
		case "f", "force":
			force = true
		}
	}
	if len(ops) == 0 {
		return p.fail(1, name, "missing file operand")
	}
	if len(ops) == 1 {
		ops = append(ops, filepath.Base(ops[0]))
	}
	targets, dest := ops[:len(ops)-1], ops[len(ops)-1]
	fi, err := os.Stat(p.path(dest))
	toDir := err == nil && fi.IsDir()
	if len(targets) > 1 && !toDir {
		return p.fail(1, name, "target %q is not a directory", dest)
	}
	ok := true
	for _, t := range targets {
		link := dest
		if toDir {
			link = filepath.Join(dest, filepath.Base(t))
		}
		if force {
			os.Remove(p.path(link))
		}
		if sym {
			err = os.Symlink(t, p.path(link))
		} else {
			err = os.Link(p.path(t), p.path(link))
		}
		if err != nil {
			p.fail(1, name, "%v", err)
			ok = false
		}
	}
	return status(ok)
}

// runReadlink is readlink [-f|-e|-m] and realpath: a link's target, or
// with -f (and as realpath) the canonical path.
func runReadlink(p *proc, name string, args []string) int {
	canon := name == "realpath"
	var files []string
	for _, a := range args {
		switch a {
		case "-f", "-e", "-m", "--canonicalize":
			canon = true
		case "-n", "-s", "-q", "-z":
		default:
			files = append(files, a)
		}
	}
	ok := true
	for _, f := range files {
		var out string
		var err error
		if canon {
			out, err = filepath.Abs(p.path(f))
			if err == nil {
				if r, rerr := filepath.EvalSymlinks(out); rerr == nil {
					out = r
				} else if name == "realpath" {
					err = rerr
				}
			}
		} else {
			out, err = os.Readlink(p.path(f))
		}
		if err != nil {
			if name == "realpath" {
				p.fail(1, name, "%v", err)
			}
			ok = false
			continue
		}
		fmt.Fprintln(p.stdout, out)
	}
	return status(ok)
}

// runBasename is basename NAME [SUFFIX].
func runBasename(p *proc, name string, args []string) int {
	if len(args) == 0 || len(args) > 2 {
		return p.fail(1, name, "usage: basename NAME [SUFFIX]")
	}
	b := filepath.Base(args[0])
	if len(args) == 2 && b != args[1] {
		b = strings.TrimSuffix(b, args[1])
	}
	fmt.Fprintln(p.stdout, b)
	return 0
}

// runDirname is dirname NAME...
func runDirname(p *proc, name string, args []string) int {
	if len(args) == 0 {
		return p.fail(1, name, "missing operand")
	}
	for _, a := range args {
		fmt.Fprintln(p.stdout, filepath.Dir(a))
	}
	return 0
}

// runRmdir is rmdir [-p] DIR...
func runRmdir(p *proc, name string, args []string) int {
	parents := false
	ok := true
	for _, a := range args {
		if a == "-p" || a == "--parents" {
			parents = true
			continue
		}
		for d := a; ; d = filepath.Dir(d) {
			if err := os.Remove(p.path(d)); err != nil {
				p.fail(1, name, "%v", err)
				ok = false
				break
			}
			if !parents || filepath.Dir(d) == d || filepath.Dir(d) == "." {
				break
			}
		}
	}
	return status(ok)
}

// runStat is stat [-c FORMAT] FILE...: FORMAT knows %n %s %a %A %F %U %u %g.
func runStat(p *proc, name string, args []string) int {
	format := ""
	var files []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "-c" || a == "--format") && i+1 < len(args):
			format = args[i+1]
			i++
		case strings.HasPrefix(a, "--format="):
			format = strings.TrimPrefix(a, "--format=")
		case a == "-L":
		default:
			files = append(files, a)
		}
	}
	ok := true
	for _, f := range files {
		fi, err := os.Lstat(p.path(f))
		if err != nil {
			p.fail(1, name, "%v", err)
			ok = false
			continue
		}
		kind := "regular file"
		switch {
		case fi.IsDir():
			kind = "directory"
		case fi.Mode()&os.ModeSymlink != 0:
			kind = "symbolic link"
		}
		if format == "" {
			fmt.Fprintf(p.stdout, "  File: %s\n  Size: %d\t%s\nAccess: (%04o/%s)\nModify: %s\n", f, fi.Size(), kind, fi.Mode().Perm(), fi.Mode(), fi.ModTime())
			continue
		}
		r := strings.NewReplacer("%n", f, "%s", fmt.Sprint(fi.Size()), "%a", fmt.Sprintf("%o", fi.Mode().Perm()),
			"%A", fi.Mode().String(), "%F", kind, "%Y", fmt.Sprint(fi.ModTime().Unix()), "%%", "%")
		fmt.Fprintln(p.stdout, r.Replace(format))
	}
	return status(ok)
}
