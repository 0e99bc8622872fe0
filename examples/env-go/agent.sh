#!/bin/sh
# THIS IS NOT A REAL CODING AGENT: the scripted stand-in of the env-go example's test. It does task 1.1
# of repo/ROADMAP.md and resolves the project's packages and their dependencies itself, as an agent
# would, with no network (its profile says network: none): that works only with what setup installed.
# (It does not compile them: its own build cache starts empty, and verification compiles anyway.)
set -eu
echo "env-go agent: task $AKIRA_TASK_ID: $AKIRA_TASK_TITLE"
case "$AKIRA_TASK_ID" in
1.1)
  cat > main.go <<'GO'
// Command hello greets whoever is named on its command line, one line per name.
package main

import (
	"fmt"
	"os"
	"strings"

	"example.com/greetings"
)

func main() {
	fmt.Println(strings.Join(greet(os.Args[1:]), "\n"))
}

// greet says hello to each name, or to the world when there is none.
func greet(names []string) []string {
	if len(names) == 0 {
		return []string{greetings.Hello("")}
	}
	var lines []string
	for _, n := range names {
		lines = append(lines, greetings.Hello(n))
	}
	return lines
}
GO
  cat > main_test.go <<'GO'
package main

import (
	"slices"
	"testing"
)

func TestGreet(t *testing.T) {
	if got := greet([]string{"Ada", "Grace"}); !slices.Equal(got, []string{"Hello, Ada!", "Hello, Grace!"}) {
		t.Errorf("greet(Ada, Grace) = %q", got)
	}
	if got := greet(nil); !slices.Equal(got, []string{"Hello, world!"}) {
		t.Errorf("greet() = %q", got)
	}
}
GO
  go list -deps -test ./... > /dev/null
  ;;
*)
  echo "env-go agent: no scripted answer for task $AKIRA_TASK_ID" >&2
  exit 1
  ;;
esac
