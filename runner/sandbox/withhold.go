package sandbox

import (
	"slices"
	"strings"
)

// minContainedSecret is the length from which a secret is also looked for inside other values: a
// key pasted into a URL or a header still is the key, while a value this short could turn up in
// anything by chance.
const minContainedSecret = 8

// Withheld are secrets no command is ever given, however its environment was put together: the
// variables Names, and any variable whose value is, or holds, one of Values. The model keys are the
// case in point: the egress proxy holds them, and a key passed under another name (an alias a
// repository's README asked for) is still a key.
type Withheld struct {
	Names  []string
	Values []string
}

// Merge is w with the names and values of o added.
func (w Withheld) Merge(o Withheld) Withheld {
	out := Withheld{Names: slices.Clone(w.Names), Values: slices.Clone(w.Values)}
	for _, n := range o.Names {
		if n != "" && !slices.Contains(out.Names, n) {
			out.Names = append(out.Names, n)
		}
	}
	for _, v := range o.Values {
		if v != "" && !slices.Contains(out.Values, v) {
			out.Values = append(out.Values, v)
		}
	}
	return out
}

// Withholds reports whether the variable name=value must not reach a command.
func (w Withheld) Withholds(name, value string) bool {
	if slices.Contains(w.Names, name) {
		return true
	}
	return w.Holds(value)
}

// Holds reports whether value is, or holds, one of the withheld values.
func (w Withheld) Holds(value string) bool {
	if value == "" {
		return false
	}
	for _, v := range w.Values {
		if v == "" {
			continue
		}
		if value == v || (len(v) >= minContainedSecret && strings.Contains(value, v)) {
			return true
		}
	}
	return false
}

// filter is env without the withheld variables.
func (w Withheld) filter(env []string) []string {
	if len(w.Names) == 0 && len(w.Values) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !w.Withholds(name, value) {
			out = append(out, kv)
		}
	}
	return out
}
