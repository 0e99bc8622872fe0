package main

import (
	"strings"
	"testing"
)

// TestVersion: what the release build stamps is what `akira version` prints.
func TestVersion(t *testing.T) {
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	version, commit, date = "v1.4.0", "0123456789ab", "2026-11-23T12:00:00Z"
	out, _, code := runCmd(t, "version")
	if code != 0 || !strings.HasPrefix(out, "akira v1.4.0 (commit 0123456789ab, built 2026-11-23T12:00:00Z, go") {
		t.Errorf("akira version = %q (exit %d)", out, code)
	}
}
