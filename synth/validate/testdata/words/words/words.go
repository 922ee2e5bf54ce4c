// Package words is a small text package whose tests frog's tests run.
package words

import (
	"errors"
	"strings"
	"unicode"
)

// Reverse returns s with its runes in reverse order.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// Vowels counts the vowels of s.
func Vowels(s string) int {
	n := 0
	for _, c := range strings.ToLower(s) {
		if strings.ContainsRune("aeiou", c) {
			n++
		}
	}
	return n
}

// Title capitalizes the first letter of every word.
func Title(s string) string {
	out := []rune(s)
	start := true
	for i, c := range out {
		if unicode.IsSpace(c) {
			start = true
			continue
		}
		if start {
			out[i] = unicode.ToUpper(c)
			start = false
		}
	}
	return string(out)
}

var errNoEquals = errors.New("no =")

// Pair splits "key=value" into its key and value.
func Pair(s string) (string, string, error) {
	i := strings.IndexByte(s, '=')
	if i < 0 {
		return "", "", errNoEquals
	}
	return s[:i], s[i+1:], nil
}

// Clip returns at most n runes of s.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}
