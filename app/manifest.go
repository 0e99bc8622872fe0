package app

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// The GitHub App's manifest has one source, manifest.json: `akira setup` posts it to GitHub, and
// `go generate` copies it to deploy/ for people who register the App by hand (a test keeps the
// two equal, and another keeps its events and permissions equal to what the handlers route).
//
//go:generate cp manifest.json ../deploy/github-app-manifest.json
//go:embed manifest.json
var manifestJSON []byte

// Manifest is a GitHub App manifest (docs.github.com: "Registering a GitHub App from a manifest").
type Manifest struct {
	Name               string            `json:"name,omitempty"`
	URL                string            `json:"url"`
	Description        string            `json:"description,omitempty"`
	HookAttributes     HookAttributes    `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url,omitempty"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// HookAttributes is the manifest's webhook.
type HookAttributes struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// AppManifest is Akira's manifest, with an example webhook and redirect URL to replace.
func AppManifest() (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(manifestJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("app: manifest.json: %w", err)
	}
	return m, nil
}
