package githubtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
