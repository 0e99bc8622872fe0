package app

import (
	"strings"
	"time"
)

// Webhook payloads are decoded into these small structs rather than go-github's event types: the intake reads
// a handful of fields, and a strict decode of fields it never reads (timestamps GitHub has sent in more than
// one format, e.g. check_suite.app.created_at) must not turn a valid delivery into a 400.

type ghUser struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

type ghRepo struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         ghUser `json:"owner"`
	DefaultBranch string `json:"default_branch"`
	HTMLURL       string `json:"html_url"`
}

type ghInstallation struct {
	ID int64 `json:"id"`
}

// envelope holds the fields every event may carry. Events without a repository (installation) or an
// installation (a webhook configured on the repository itself) leave them nil.
type envelope struct {
	Action       string          `json:"action"`
	Installation *ghInstallation `json:"installation"`
	Repository   *ghRepo         `json:"repository"`
	Sender       *ghUser         `json:"sender"`
}

func (e envelope) installationID() int64 {
	if e.Installation == nil {
		return 0
	}
	return e.Installation.ID
}

func (e envelope) repoFullName() string {
	if e.Repository == nil {
		return ""
	}
	return e.Repository.FullName
}

func (e envelope) senderLogin() string {
	if e.Sender == nil {
		return ""
	}
	return e.Sender.Login
}

// ownerRepo splits the repository into owner and name, preferring the explicit fields.
func (e envelope) ownerRepo() (string, string) {
	if e.Repository == nil {
		return "", ""
	}
	owner, name := e.Repository.Owner.Login, e.Repository.Name
	if owner == "" || name == "" {
		owner, name, _ = strings.Cut(e.Repository.FullName, "/")
	}
	return owner, name
}

type issueCommentEvent struct {
	envelope
	Issue struct {
		Number      int       `json:"number"`
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	Comment struct {
		ID        int64     `json:"id"`
		Body      string    `json:"body"`
		User      ghUser    `json:"user"`
		CreatedAt time.Time `json:"created_at"`
	} `json:"comment"`
}

type pushCommit struct {
	ID       string   `json:"id"`
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
}

type pushEvent struct {
	envelope
	Ref     string `json:"ref"`
	After   string `json:"after"`
	Deleted bool   `json:"deleted"`
	Pusher  struct {
		Name string `json:"name"`
	} `json:"pusher"`
	Commits    []pushCommit `json:"commits"`
	HeadCommit *pushCommit  `json:"head_commit"`
}

type prRef struct {
	Ref  string  `json:"ref"`
	SHA  string  `json:"sha"`
	Repo *ghRepo `json:"repo"`
}

type pullRequestEvent struct {
	envelope
	Number      int `json:"number"`
	PullRequest struct {
		Number    int       `json:"number"`
		User      ghUser    `json:"user"`
		Head      prRef     `json:"head"`
		Base      prRef     `json:"base"`
		UpdatedAt time.Time `json:"updated_at"`
	} `json:"pull_request"`
}

// reviewPullRequest is the pull request of a review event.
type reviewPullRequest struct {
	Number int    `json:"number"`
	User   ghUser `json:"user"`
	Head   prRef  `json:"head"`
	Base   prRef  `json:"base"`
}

type pullRequestReviewEvent struct {
	envelope
	Review struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
		Body  string `json:"body"`
		User  ghUser `json:"user"`
	} `json:"review"`
	PullRequest reviewPullRequest `json:"pull_request"`
}

type pullRequestReviewCommentEvent struct {
	envelope
	Comment struct {
		ID       int64  `json:"id"`
		ReviewID int64  `json:"pull_request_review_id"`
		Body     string `json:"body"`
		User     ghUser `json:"user"`
	} `json:"comment"`
	PullRequest reviewPullRequest `json:"pull_request"`
}

type checkRunEvent struct {
	envelope
	CheckRun struct {
		ID         int64  `json:"id"`
		ExternalID string `json:"external_id"`
		HeadSHA    string `json:"head_sha"`
		App        *struct {
			ID int64 `json:"id"`
		} `json:"app"`
		PullRequests []struct {
			Number int `json:"number"`
		} `json:"pull_requests"`
	} `json:"check_run"`
	RequestedAction *struct {
		Identifier string `json:"identifier"`
	} `json:"requested_action"`
}

// ciEvent is a check_suite, workflow_run or status delivery: what a CI concluded about a commit.
type ciEvent struct {
	envelope
	CheckSuite  *ciBody `json:"check_suite"`
	WorkflowRun *ciBody `json:"workflow_run"`
	// A status's commit, context, state and the branches whose head the commit is.
	SHA      string `json:"sha"`
	Context  string `json:"context"`
	State    string `json:"state"`
	Branches []struct {
		Name string `json:"name"`
	} `json:"branches"`
}

type ciBody struct {
	HeadSHA    string `json:"head_sha"`
	HeadBranch string `json:"head_branch"`
	Name       string `json:"name"`
	Conclusion string `json:"conclusion"`
	App        *struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	} `json:"app"`
}

// issuesEvent is an issues delivery: an issue assigned or labelled (or the same taken back).
type issuesEvent struct {
	envelope
	Issue struct {
		Number int `json:"number"`
	} `json:"issue"`
	Assignee *ghUser `json:"assignee"`
	Label    *struct {
		Name string `json:"name"`
	} `json:"label"`
}
