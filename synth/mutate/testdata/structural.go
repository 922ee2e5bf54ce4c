package structural

import "strings"

// Index returns the first index of needle in xs, or -1.
func Index(xs []string, needle string) int {
	found := -1
	for i, x := range xs {
		if strings.EqualFold(x, needle) {
			found = i
			break
		}
	}
	return found
}

// Total sums the even numbers, skipping negatives.
func Total(xs []int) int {
	t := 0
	for _, x := range xs {
		if x < 0 {
			continue
		}
		t += x
	}
	return t
}

type counter struct{ n int }

func (c *counter) bump(by int) {
	c.n *= by
	c.n++
}
