package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxModelRequest bounds what the proxy reads of a model request to find the model it asks for; a
// larger request is refused (the providers' own limits are smaller).
const maxModelRequest = 64 << 20

var errRequestTooLarge = fmt.Errorf("the request is larger than %d MiB", maxModelRequest>>20)

// requestedModel reads the model a call asks for from its JSON body and puts the body back for
// forwarding: "" for a request without one (GET /v1/models).
func requestedModel(r *http.Request) (string, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return "", nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxModelRequest+1))
	r.Body.Close()
	if err != nil {
		return "", fmt.Errorf("reading the request: %w", err)
	}
	if len(body) > maxModelRequest {
		return "", errRequestTooLarge
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var doc struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return "", nil // not JSON: the provider answers it, and nothing in it is metered as a model
	}
	return doc.Model, nil
}

// refusal says why the session does not forward a call for model: a model Akira has no price for
// would be recorded at $0. The profile's own model passes (an unpriced one was warned about at
// start, and refused there when a cost budget is set); so does any model when the profile names
// none and no budget is set, since Akira cannot tell the CLI's default from another. Whatever text
// steers the agent (a repository's .claude/agents/*.md or .claude/settings.json, an issue) cannot
// move its calls to a model Akira does not price.
func (s *Session) refusal(model string) string {
	m := s.cfg.Model
	if m.Price == nil || model == "" || model == m.Model {
		return ""
	}
	if _, ok := m.Price(model, Tokens{}); ok {
		return ""
	}
	if m.Model == "" && s.cfg.MaxCostUSD <= 0 {
		return ""
	}
	if m.Model == "" {
		return fmt.Sprintf("akira egress proxy: model %q has no price and this attempt has a cost budget: Akira refuses calls it cannot price (the operator may add the model to prices:)", model)
	}
	return fmt.Sprintf("akira egress proxy: this agent runs %s; model %q is not it and has no price: Akira refuses calls it cannot price (the operator may add the model to prices:)", m.Model, model)
}

// admit answers a call the session does not forward, and says whether it did.
func (s *Session) admit(w http.ResponseWriter, r *http.Request) bool {
	model, err := requestedModel(r)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errRequestTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		modelError(w, s.cfg.Model.Protocol, status, "invalid_request_error", "akira egress proxy: "+err.Error())
		return false
	}
	if why := s.refusal(model); why != "" {
		s.p.log.Warn("egress: model call refused", "model", model, "agent_model", s.cfg.Model.Model)
		modelError(w, s.cfg.Model.Protocol, http.StatusForbidden, "permission_error", why)
		return false
	}
	return true
}
