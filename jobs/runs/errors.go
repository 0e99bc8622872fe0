package runs

import (
	"errors"
)

// ErrNothingToDo ends a job that finds its work already done (a duplicate, a finished run).
var ErrNothingToDo = errors.New("jobs: nothing to do")
