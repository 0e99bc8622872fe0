package gh

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CreatedApp is a GitHub App that the manifest flow created: what GitHub hands out once, in exchange for
// the code it appended to the manifest's redirect URL.
type CreatedApp struct {
	ID            int64
	Slug          string
	Name          string
	HTMLURL       string
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PrivateKeyPEM string
}

// CompleteManifest exchanges a manifest flow's code for the new App's credentials
// (POST /app-manifests/{code}/conversions, which takes no authentication). A code is good once,
// for an hour.
func CompleteManifest(ctx context.Context, client *http.Client, baseURL, code string) (*CreatedApp, error) {
	if code == "" {
		return nil, errors.New("gh: manifest conversion: no code")
	}
	if client == nil {
		client = http.DefaultClient
	}
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	base, err := url.Parse(baseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("gh: base url %q is not an http(s) URL", baseURL)
	}
	a := &App{base: base}
	up, _ := url.Parse(uploadURL(base))
	a.upload = up
	gc := a.newGitHub(client.Transport)
	cfg, _, err := gc.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, apiErr("manifest conversion", err)
	}
	app := &CreatedApp{
		ID: cfg.GetID(), Slug: cfg.GetSlug(), Name: cfg.GetName(), HTMLURL: cfg.GetHTMLURL(),
		ClientID: cfg.GetClientID(), ClientSecret: cfg.GetClientSecret(), WebhookSecret: cfg.GetWebhookSecret(),
		PrivateKeyPEM: cfg.GetPEM(),
	}
	if app.ID == 0 || app.PrivateKeyPEM == "" || app.WebhookSecret == "" {
		return nil, errors.New("gh: manifest conversion: GitHub's answer lacks the App id, its private key or its webhook secret")
	}
	return app, nil
}
