package config

import (
	"strings"
	"testing"
)

func TestSpendCaps(t *testing.T) {
	op, err := ParseOperator([]byte("spend:\n  monthly_usd: 50\n  installations: {7: 500, 9: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		installation int64
		want         float64
	}{{7, 500}, {9, 0}, {11, 50}} {
		if got := op.Spend.CapFor(tt.installation); got != tt.want {
			t.Errorf("CapFor(%d) = %v, want %v", tt.installation, got, tt.want)
		}
	}
	if op, err := ParseOperator([]byte("max_attempts: 2\n")); err != nil || op.Spend.CapFor(7) != 0 {
		t.Errorf("no spend: cap %v, %v; want none", op.Spend.CapFor(7), err)
	}
	for _, bad := range []string{"spend:\n  monthly_usd: -1\n", "spend:\n  installations: {7: -5}\n", "spend:\n  monthy_usd: 5\n"} {
		if _, err := ParseOperator([]byte(bad)); err == nil || !strings.Contains(err.Error(), "spend") && !strings.Contains(err.Error(), "monthy_usd") {
			t.Errorf("%q: %v, want an error naming the key", bad, err)
		}
	}
}
