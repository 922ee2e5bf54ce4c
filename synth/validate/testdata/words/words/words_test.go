package words

import "testing"

func TestReverse(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "abc": "cba", "héllo": "olléh"} {
		if got := Reverse(in); got != want {
			t.Errorf("Reverse(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVowels(t *testing.T) {
	for in, want := range map[string]int{"": 0, "xyz": 0, "Audio": 4, "banana": 3} {
		if got := Vowels(in); got != want {
			t.Errorf("Vowels(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{"": "", "go": "Go", "hello big world": "Hello Big World", " a  b": " A  B"} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPair(t *testing.T) {
	k, v, err := Pair("a=b=c")
	if k != "a" || v != "b=c" || err != nil {
		t.Errorf("Pair(a=b=c) = %q, %q, %v", k, v, err)
	}
	if _, _, err := Pair("nope"); err == nil {
		t.Error("Pair(nope): no error")
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"hello", 3, "hel"}, {"hi", 3, "hi"}, {"héllo", 2, "hé"}, {"abc", 3, "abc"}} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
