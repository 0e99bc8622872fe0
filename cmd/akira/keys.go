package main

import (
	"fmt"
	"slices"

	"github.com/akira-bot/akira/runner/sandbox"
)

// verifyKeyWarnings say which variables of the operator's env (passed to verification, setup and
// services) hold a model key under a name of their own: none of those commands gets them. The
// configuration refuses the model keys' own names there.
func verifyKeyWarnings(env []string, keys sandbox.Withheld) []string {
	var out []string
	for _, n := range env {
		if slices.Contains(keys.Names, n) {
			out = append(out, fmt.Sprintf("env: %s holds a model key: verification, setup and services never get it", n))
		}
	}
	return out
}
