package calc

import "testing"

func TestMax(t *testing.T) {
	if got := Max(2, 3); got != 3 {
		t.Errorf("Max(2, 3) = %d, want 3", got)
	}
	if got := Max(5, 1); got != 5 {
		t.Errorf("Max(5, 1) = %d, want 5", got)
	}
}

func TestAbs(t *testing.T) {
	if got := Abs(-4); got != 4 {
		t.Errorf("Abs(-4) = %d, want 4", got)
	}
}

func TestCount(t *testing.T) {
	if got := Count(3); got != 3 {
		t.Errorf("Count(3) = %d, want 3", got)
	}
}

func TestSqrt(t *testing.T) {
	if got, err := Sqrt(10); err != nil || got != 3 {
		t.Errorf("Sqrt(10) = %d, %v, want 3, nil", got, err)
	}
	if _, err := Sqrt(-1); err == nil {
		t.Error("Sqrt(-1) succeeded")
	}
}
