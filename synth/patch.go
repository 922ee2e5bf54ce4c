package synth

import (
	"fmt"
	"strconv"
	"strings"
)

// ApplyPatch applies a unified diff of one file (the form of a task's gold
// patch: "--- a/f", "+++ b/f", hunks) to src. Each hunk's context and
// removed lines must match src where the hunk says, or within a few lines
// of it; otherwise it fails naming the hunk.
func ApplyPatch(src []byte, patch string) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	pl := strings.Split(strings.TrimSuffix(patch, "\n"), "\n")
	var out []string
	at := 0 // next line of src not yet copied
	hunks := 0
	for i := 0; i < len(pl); {
		l := pl[i]
		if !strings.HasPrefix(l, "@@") {
			i++
			continue
		}
		hunks++
		start, err := hunkStart(l)
		if err != nil {
			return nil, fmt.Errorf("hunk %d: %w", hunks, err)
		}
		var old, new []string
		for i++; i < len(pl) && !strings.HasPrefix(pl[i], "@@") && !strings.HasPrefix(pl[i], "--- "); i++ {
			b := pl[i]
			switch {
			case b == "" || b[0] == ' ':
				text := strings.TrimPrefix(b, " ") + "\n"
				old, new = append(old, text), append(new, text)
			case b[0] == '-':
				old = append(old, b[1:]+"\n")
			case b[0] == '+':
				new = append(new, b[1:]+"\n")
			case b[0] == '\\': // "\ No newline at end of file"
			default:
				return nil, fmt.Errorf("hunk %d: bad line %q", hunks, b)
			}
		}
		pos := -1
		for d := 0; d <= 10 && pos < 0; d++ {
			for _, p := range []int{start - 1 + d, start - 1 - d} {
				if p >= at && matchAt(lines, p, old) {
					pos = p
					break
				}
			}
		}
		if pos < 0 {
			return nil, fmt.Errorf("hunk %d (line %d) does not apply", hunks, start)
		}
		out = append(out, lines[at:pos]...)
		out = append(out, new...)
		at = pos + len(old)
	}
	if hunks == 0 {
		return nil, fmt.Errorf("patch has no hunk")
	}
	out = append(out, lines[at:]...)
	res := strings.Join(out, "")
	if !strings.HasSuffix(string(src), "\n") && strings.HasSuffix(res, "\n") && at == len(lines) {
		res = strings.TrimSuffix(res, "\n")
	}
	return []byte(res), nil
}

func matchAt(lines []string, p int, want []string) bool {
	if p < 0 || p+len(want) > len(lines) {
		return false
	}
	for i, w := range want {
		l := lines[p+i]
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		if l != w {
			return false
		}
	}
	return true
}

// hunkStart reads the old start line of "@@ -l,s +l,s @@".
func hunkStart(h string) (int, error) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") {
		return 0, fmt.Errorf("bad hunk header %q", h)
	}
	n, _, _ := strings.Cut(f[1][1:], ",")
	l, err := strconv.Atoi(n)
	if err != nil {
		return 0, fmt.Errorf("bad hunk header %q", h)
	}
	if l == 0 {
		l = 1
	}
	return l, nil
}

// SplitPatch splits a unified diff of several files into one diff per
// file, keyed by the path after "--- a/" (or "--- ").
func SplitPatch(patch string) map[string]string {
	out := map[string]string{}
	var cur string
	var b strings.Builder
	flush := func() {
		if cur != "" {
			out[cur] += b.String()
		}
		b.Reset()
	}
	for _, l := range strings.SplitAfter(patch, "\n") {
		if name, ok := strings.CutPrefix(l, "--- "); ok {
			flush()
			name = strings.TrimSpace(name)
			if i := strings.IndexByte(name, '\t'); i >= 0 {
				name = name[:i]
			}
			cur = strings.TrimPrefix(name, "a/")
		}
		b.WriteString(l)
	}
	flush()
	return out
}
