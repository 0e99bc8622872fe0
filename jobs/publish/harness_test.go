package publish

import (
	"testing"

	"github.com/akira-bot/akira/internal/jobstest"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/store"
)

// harness is what a reporter's tests need: a recording fake of GitHub and a store on a test Redis.
type harness struct {
	gh    *jobstest.GitHub
	store *store.Store
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	rdb, prefix := redistest.Prefixed(t)
	return &harness{gh: jobstest.NewGitHub(), store: store.NewStore(rdb, prefix)}
}
