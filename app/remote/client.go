// Package remote is the client side of an Akira server's REST API (/api/v1 on the admin address):
// the calls `akira handoff`, `akira status --server` and `akira mcp` make, and following a run to
// its end. It speaks HTTP only; the types are the API's own (app/admin).
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/app/admin"
)

// Client calls one Akira server with one token.
type Client struct {
	server string
	token  string
	http   *http.Client
	// via is how the server's audit records what this client starts (ViaHeader): "MCP" for the
	// editor's assistant through akira mcp, "cli" for akira handoff; "" leaves it the API's.
	via string
}

// ViaHeader tells the server through what a request came (audited as the action's via).
const ViaHeader = "X-Akira-Via"

// Via is c for requests that came through via ("MCP", "cli").
func (c *Client) Via(via string) *Client {
	v := *c
	v.via = via
	return &v
}

// New checks the server's address (AKIRA_SERVER: the admin address, e.g. http://127.0.0.1:9090, the default of AKIRA_ADMIN_ADDR)
// and the token (AKIRA_TOKEN); hc nil is a client with a timeout.
func New(server, token string, hc *http.Client) (*Client, error) {
	server = strings.TrimRight(strings.TrimSpace(server), "/")
	if server == "" {
		return nil, errors.New("remote: no server: set AKIRA_SERVER to the admin address of your Akira (AKIRA_ADMIN_ADDR of akira serve, default 127.0.0.1:9090), e.g. http://127.0.0.1:9090")
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote: AKIRA_SERVER %q is not an http(s) address", server)
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("remote: no token: set AKIRA_TOKEN to an API token (akira token create NAME --scope start)")
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{server: strings.TrimSuffix(server, "/api/v1"), token: strings.TrimSpace(token), http: hc}, nil
}

// APIError is an answer of the server other than success.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("akira server: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// StatusOf is the HTTP status of an APIError, 0 for any other error.
func StatusOf(err error) int {
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.Status
	}
	return 0
}

func (c *Client) do(ctx context.Context, method, path string, body any, header http.Header, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("remote: %w", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+"/api/v1"+path, rd)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.via != "" {
		req.Header.Set(ViaHeader, c.via)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("remote: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("remote: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var ae struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &ae) != nil || ae.Error == "" {
			ae.Error = strings.TrimSpace(string(data))
		}
		return &APIError{Status: resp.StatusCode, Message: ae.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("remote: %s %s: the answer is not the API's: %w", method, path, err)
		}
	}
	return nil
}

// Start hands off a run; key is the Idempotency-Key ("" for none).
func (c *Client) Start(ctx context.Context, b admin.StartBody, key string) (admin.StartResult, error) {
	var out admin.StartResult
	h := http.Header{}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	return out, c.do(ctx, http.MethodPost, "/runs", b, h, &out)
}

// Run reads one run.
func (c *Client) Run(ctx context.Context, id string) (admin.RunDetail, error) {
	var out admin.RunDetail
	return out, c.do(ctx, http.MethodGet, "/runs/"+url.PathEscape(id), nil, nil, &out)
}

// Runs lists runs, newest first: of repo ("owner/name", "" for all) in the states given.
func (c *Client) Runs(ctx context.Context, repo string, states []string, limit int) ([]admin.RunSummary, error) {
	q := url.Values{}
	if repo != "" {
		q.Set("repo", repo)
	}
	if len(states) > 0 {
		q.Set("state", strings.Join(states, ","))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Runs []admin.RunSummary `json:"runs"`
	}
	path := "/runs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return out.Runs, c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// Stop asks the run to stop (as /akira stop).
func (c *Client) Stop(ctx context.Context, id string) (string, error) {
	var out admin.ControlResult
	return out.Result, c.do(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/stop", nil, nil, &out)
}

// Answer answers the n-th escalation waiting on a run: approve, retry (with guidance), skip or abort.
func (c *Client) Answer(ctx context.Context, id string, n int, action, guidance string) (string, error) {
	var out admin.ControlResult
	err := c.do(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/escalations/"+strconv.Itoa(n),
		admin.EscalationBody{Action: action, Guidance: guidance}, nil, &out)
	return out.Result, err
}

// Ended says a run's status is one it does not leave by itself: succeeded, failed, aborted or
// stopped (a person may continue a stopped run, but nothing happens until one does).
func Ended(status string) bool {
	switch status {
	case "succeeded", "failed", "aborted", "stopped":
		return true
	}
	return false
}
