package ports

import "context"

// GitHub's mergeable_state words that say a pull request's branch no longer merges into its base as
// it is: its base moved under it.
const (
	// MergeStateDirty: the merge conflicts.
	MergeStateDirty = "dirty"
	// MergeStateBehind: the base has commits the head lacks, and the base's rules want it up to date.
	MergeStateBehind = "behind"
)

// BaseComparison is how a branch stands against its base: GitHub's compare of base...head.
type BaseComparison struct {
	AheadBy, BehindBy int
	// BaseHead is the base's head commit.
	BaseHead string
}

// Behind says the base has commits the branch lacks.
func (c BaseComparison) Behind() bool { return c.BehindBy > 0 }

// Bases compares a run's branch with its base branch.
type Bases interface {
	// CompareBase compares head with base (both branches of the repository); an error wrapping
	// ErrGitHubNotFound when either is missing.
	CompareBase(ctx context.Context, owner, repo, base, head string) (BaseComparison, error)
}
