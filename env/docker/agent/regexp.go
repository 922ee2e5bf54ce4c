package main

import (
	"fmt"
	"regexp"
	"strings"
)

// compileRE compiles a POSIX regular expression, basic (grep, sed) or
// extended (-E), into Go's RE2 syntax: in a BRE, \( \) \{ \} \| \+ \? are
// the operators and ( ) { } | + ? are literals; \< and \> (GNU) become \b.
// Back-references (\1) are not supported by RE2 and are refused.
func compileRE(re string, extended, icase bool) (*regexp.Regexp, error) {
	var b strings.Builder
	if icase {
		b.WriteString("(?i)")
	}
	atStart := true // where a BRE's * is a literal
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\' && i+1 < len(re):
			i++
			d := re[i]
			switch {
			case d >= '1' && d <= '9':
				return nil, fmt.Errorf("back-reference \\%c is not supported", d)
			case d == '<' || d == '>':
				b.WriteString(`\b`)
			case !extended && strings.IndexByte("(){}|+?", d) >= 0:
				b.WriteByte(d)
				atStart = d == '(' || d == '|'
				continue
			case d == 'n':
				b.WriteString(`\n`)
			case d == 't':
				b.WriteString(`\t`)
			case strings.IndexByte(`wWsSbB`, d) >= 0:
				b.WriteByte('\\')
				b.WriteByte(d)
			default:
				b.WriteString(regexp.QuoteMeta(string(d)))
			}
		case c == '[':
			j := bracketEnd(re, i)
			if j < 0 {
				return nil, fmt.Errorf("unmatched [ in %q", re)
			}
			b.WriteString(bracket(re[i : j+1]))
			i = j
		case !extended && strings.IndexByte("(){}|+?", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '*' && atStart && !extended:
			b.WriteString(`\*`)
		case extended && c == '{' && !validInterval(re[i:]):
			b.WriteString(`\{`)
		default:
			b.WriteByte(c)
		}
		atStart = c == '^' && i == 0
	}
	return regexp.Compile(b.String())
}

// bracketEnd returns the index of the ] that closes the bracket expression
// opening at re[i], or -1.
func bracketEnd(re string, i int) int {
	j := i + 1
	if j < len(re) && re[j] == '^' {
		j++
	}
	if j < len(re) && re[j] == ']' {
		j++
	}
	for ; j < len(re); j++ {
		switch {
		case re[j] == '[' && j+1 < len(re) && strings.IndexByte(":.=", re[j+1]) >= 0:
			end := strings.Index(re[j+2:], string(re[j+1])+"]")
			if end < 0 {
				return -1
			}
			j += 2 + end + 1
		case re[j] == ']':
			return j
		}
	}
	return -1
}

// bracket rewrites a POSIX bracket expression for RE2, where a backslash
// inside brackets is an escape (in POSIX it is a literal).
func bracket(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			b.WriteString(`\\`)
			continue
		}
		if s[i] == '[' && i+1 < len(s) && s[i+1] == ':' {
			end := strings.Index(s[i:], ":]")
			b.WriteString(s[i : i+end+2])
			i += end + 1
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var intervalRE = regexp.MustCompile(`^\{[0-9]+(,[0-9]*)?\}`)

func validInterval(s string) bool { return intervalRE.MatchString(s) }
