package main

import (
	"strings"
	"testing"
)

func TestRel(t *testing.T) {
	a := &agent{dir: "/workspace"}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"a.go", "a.go", true},
		{"./d/../a.go", "a.go", true},
		{"/workspace/x/y", "x/y", true},
		{"/workspace", ".", true},
		{"/workspace2/x", "", false},
		{"/etc/passwd", "", false},
		{"../x", "", false},
		{"a/../../x", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, err := a.rel(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("rel(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{10, []string{"hello"}, "hello", false},
		{5, []string{"hello"}, "hello", false},
		{4, []string{"hello"}, "hell", true},
		{6, []string{"abc", "def", "ghi"}, "abcdef", true},
	}
	for _, tc := range tests {
		c := &capBuffer{max: tc.max}
		for _, w := range tc.writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Errorf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if got := c.buf.String(); got != tc.want || c.truncated != tc.truncated {
			t.Errorf("writes %q into %d: %q truncated %v; want %q, %v", strings.Join(tc.writes, "|"), tc.max, got, c.truncated, tc.want, tc.truncated)
		}
	}
}
