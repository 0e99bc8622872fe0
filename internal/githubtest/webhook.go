package githubtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// SignPayload returns the X-Hub-Signature-256 value for a webhook body: "sha256=" and the hex HMAC-SHA256.
func SignPayload(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// SignedWebhook builds the POST GitHub would send to a webhook URL for this app: the headers GitHub sets
// (X-GitHub-Event, X-GitHub-Delivery, X-Hub-Signature-256, hook target) and the body. A payload of type []byte
// or json.RawMessage is sent unchanged (sign fixture bytes as they are); anything else is marshalled to JSON.
func (s *Server) SignedWebhook(target, secret, event, deliveryID string, payload any) *http.Request {
	var body []byte
	switch p := payload.(type) {
	case []byte:
		body = p
	case json.RawMessage:
		body = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			s.fatalf("webhook payload: %v", err)
			return nil
		}
		body = b
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		s.fatalf("webhook request: %v", err)
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/githubtest")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", deliveryID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(s.appID, 10))
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", SignPayload(secret, body))
	}
	return req
}

// SetWebhook sets the app's webhook URL and secret: Deliver sends there, and so does a redelivery the
// app asks for (POST /app/hook/deliveries/{id}/attempts), as GitHub does.
func (s *Server) SetWebhook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookURL, s.hookSecret = url, secret
}

// Deliver sends a webhook to the app's URL (SetWebhook) and records the delivery, payload included,
// for the deliveries API: the app's answer is the delivery's status. It returns the answer.
func (s *Server) Deliver(event, guid string, payload any) (status int, body []byte, err error) {
	s.mu.Lock()
	target, secret := s.hookURL, s.hookSecret
	s.mu.Unlock()
	if target == "" {
		return 0, nil, fmt.Errorf("githubtest: deliver: no webhook URL (SetWebhook)")
	}
	return s.deliver(target, secret, event, guid, payload, false)
}

func (s *Server) deliver(target, secret, event, guid string, payload any, redelivery bool) (int, []byte, error) {
	req := s.SignedWebhook(target, secret, event, guid, payload)
	raw, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(raw))
	var head struct {
		Action       string `json:"action"`
		Installation struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(raw, &head)
	d := Delivery{GUID: guid, Event: event, Action: head.Action, Redelivery: redelivery,
		InstallationID: head.Installation.ID, RepositoryID: head.Repository.ID, Payload: raw}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.Status = "timed out"
		s.AddDelivery(d)
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	d.StatusCode, d.Status = resp.StatusCode, http.StatusText(resp.StatusCode)
	s.AddDelivery(d)
	return resp.StatusCode, body, nil
}
