// Package calc is a tiny package whose tests frog's validator runs.
package calc

import "errors"

// Max returns the larger of a and b.
func Max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Abs returns the absolute value of v.
func Abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Count counts from 0 to n.
func Count(n int) int {
	c := 0
	for i := 0; i < n; i++ {
		c++
	}
	return c
}

// Unused is covered by no test.
func Unused(a, b int) int {
	return a * b
}

var errNegative = errors.New("negative")

// Sqrt returns the integer square root of v.
func Sqrt(v int) (int, error) {
	if v < 0 {
		return 0, errNegative
	}
	r := 0
	for (r+1)*(r+1) <= v {
		r++
	}
	return r, nil
}
