package cost

import "testing"

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		usd  float64
		want string
	}{
		{0, "$0.00"},
		{0.0042, "$0.0042"},
		{0.00004, "$0.0001"}, // a model was called: never $0.00
		{0.000049, "$0.0001"},
		{0.00006, "$0.0001"},
		{0.00016, "$0.0002"},
		{0.012, "$0.012"},
		{0.5, "$0.50"},
		{1.23456, "$1.2346"},
		{12.3, "$12.30"},
		{4.2, "$4.20"},
		{-0.25, "-$0.25"},
	} {
		if got := Format(tc.usd); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.usd, got, tc.want)
		}
	}
}

// TestSumAddsUp: tasks of $0.00404 read "$0.004" each and a sub-unit one "$0.0001"; the total reads
// "$0.0121", their sum, where rounding to cents made them "$0.00" each and "$0.01" together.
func TestSumAddsUp(t *testing.T) {
	parts := []float64{0.00404, 0.00404, 0.00404, 0.00003}
	var shown int64
	for _, p := range parts {
		shown += Units(p)
	}
	total := Sum(parts...)
	if Units(total) != shown {
		t.Errorf("Sum(%v) = %v: %d units, the parts shown add up to %d", parts, total, Units(total), shown)
	}
	if got := Format(total); got != "$0.0121" {
		t.Errorf("Format(Sum) = %q, want $0.0121", got)
	}
}
