#!/bin/sh
# THIS IS NOT A REAL CODING AGENT. It stands in for one (Claude Code, Codex, aider, Akira's built-in
# agent...) so that `make demo` runs with no API key and no agent installed. It reads the task Akira
# gives it (AKIRA_TASK_ID, the prompt on stdin and in $AKIRA_PROMPT_FILE) and writes a scripted
# answer for each task of examples/demo/repo/ROADMAP.md.
#
# Task 1.3 is scripted to get it wrong first: its first attempt forgets the zero check, verification
# fails, and Akira retries with the failure in $AKIRA_FEEDBACK_FILE; the second attempt reads that
# feedback and fixes the bug, as a real agent would. (make demo-app allows one attempt per task, so
# there a person's `/akira retry <guidance>` is the feedback the next attempt reads.)
set -eu
echo "demo agent: task $AKIRA_TASK_ID, attempt $AKIRA_ATTEMPT: $AKIRA_TASK_TITLE"
sleep "${DEMO_AGENT_DELAY:-1}" # so the live view has something to show

case "$AKIRA_TASK_ID" in
1.1)
  cat > calc.go <<'EOF'
package main

// Add returns a + b.
func Add(a, b int) int { return a + b }
EOF
  cat > calc_test.go <<'EOF'
package main

import "testing"

func TestAdd(t *testing.T) {
	for _, tt := range []struct{ a, b, want int }{{2, 3, 5}, {-1, 1, 0}, {0, 0, 0}} {
		if got := Add(tt.a, tt.b); got != tt.want {
			t.Errorf("Add(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
EOF
  ;;
1.2)
  cat >> calc.go <<'EOF'

// Sub returns a - b.
func Sub(a, b int) int { return a - b }
EOF
  cat > sub_test.go <<'EOF'
package main

import "testing"

func TestSub(t *testing.T) {
	if got := Sub(5, 3); got != 2 {
		t.Errorf("Sub(5, 3) = %d, want 2", got)
	}
}
EOF
  ;;
1.3)
  cat > div_test.go <<'EOF'
package main

import "testing"

func TestDiv(t *testing.T) {
	if got, err := Div(7, 2); err != nil || got != 3 {
		t.Errorf("Div(7, 2) = %d, %v; want 3, nil", got, err)
	}
	if _, err := Div(7, 0); err == nil {
		t.Error("Div(7, 0) returned no error")
	}
}
EOF
  if [ -n "${AKIRA_FEEDBACK_FILE:-}" ] && grep -q 'divide by zero\|TestDiv' "$AKIRA_FEEDBACK_FILE"; then
    echo "demo agent: the feedback on the last attempt says:"
    grep -m 3 'divide by zero\|FAIL' "$AKIRA_FEEDBACK_FILE" | sed 's/^/  | /'
    echo "demo agent: adding the zero check"
    cat > div.go <<'EOF'
package main

import "errors"

// ErrDivByZero is returned by Div when the divisor is zero.
var ErrDivByZero = errors.New("division by zero")

// Div returns a / b, or ErrDivByZero when b is 0.
func Div(a, b int) (int, error) {
	if b == 0 {
		return 0, ErrDivByZero
	}
	return a / b, nil
}
EOF
  else
    echo "demo agent: writing Div (and, like agents sometimes do, forgetting the zero check)"
    cat > div.go <<'EOF'
package main

// Div returns a / b.
func Div(a, b int) (int, error) { return a / b, nil }
EOF
  fi
  ;;
2.1)
  cat > main.go <<'EOF'
// Command calc is the demo project of Akira: a tiny calculator that the roadmap grows task by task.
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: calc <a> <+|-|/> <b>")
		os.Exit(2)
	}
	out, err := eval(os.Args[1], os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "calc:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}

func eval(x, op, y string) (int, error) {
	a, err := strconv.Atoi(x)
	if err != nil {
		return 0, err
	}
	b, err := strconv.Atoi(y)
	if err != nil {
		return 0, err
	}
	switch op {
	case "+":
		return Add(a, b), nil
	case "-":
		return Sub(a, b), nil
	case "/":
		return Div(a, b)
	}
	return 0, fmt.Errorf("unknown operator %q", op)
}
EOF
  cat > main_test.go <<'EOF'
package main

import "testing"

func TestEval(t *testing.T) {
	for _, tt := range []struct {
		x, op, y string
		want     int
	}{{"2", "+", "3", 5}, {"5", "-", "7", -2}, {"6", "/", "3", 2}} {
		if got, err := eval(tt.x, tt.op, tt.y); err != nil || got != tt.want {
			t.Errorf("eval(%s %s %s) = %d, %v", tt.x, tt.op, tt.y, got, err)
		}
	}
	if _, err := eval("1", "/", "0"); err == nil {
		t.Error("1 / 0: no error")
	}
}
EOF
  ;;
2.2)
  cat >> README.md <<'EOF'

## Operators

`calc <a> <op> <b>` with `+` (add), `-` (subtract) and `/` (integer division; dividing by zero is an error).
EOF
  ;;
*)
  echo "demo agent: no scripted answer for task $AKIRA_TASK_ID; a real agent would read the prompt:" >&2
  head -n 5 "$AKIRA_PROMPT_FILE" >&2
  exit 1
  ;;
esac
