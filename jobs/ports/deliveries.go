package ports

import (
	"context"
	"time"
)

// Delivery is one attempt of a webhook delivery, as GitHub lists them. Every attempt of a delivery
// (the original and its redeliveries) shares the GUID, which is the X-GitHub-Delivery header.
type Delivery struct {
	ID          int64
	GUID        string
	StatusCode  int // Akira's answer; 0 when GitHub got none (timeout, connection refused)
	Redelivery  bool
	Event       string
	Action      string // the payload's action ("created"), "" for events without one
	DeliveredAt time.Time
}

// Deliveries reads the App's webhook deliveries and asks for redeliveries, as the App.
type Deliveries interface {
	// ListDeliveries returns one page, newest first, and the cursor of the next ("" on the last).
	ListDeliveries(ctx context.Context, cursor string) ([]Delivery, string, error)
	Redeliver(ctx context.Context, id int64) error
}

// RepoInstallations finds the installation of the App on a repository (app/gh implements it);
// ErrGitHubNotFound when the App is not installed there.
type RepoInstallations interface {
	RepoInstallation(ctx context.Context, owner, repo string) (int64, error)
}
