package egress_test

import (
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/timeline"
)

// recorded collects what a session tells its hook.
type recorded struct {
	mu     sync.Mutex
	events []timeline.Event
}

func (r *recorded) add(ev timeline.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorded) all() []timeline.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]timeline.Event(nil), r.events...)
}

// A session tells its hook each model call as it ends, with the usage it metered and the price,
// streamed or not; each call it refused and why (another key, the attempt's budget spent, a model
// Akira cannot price); what the model endpoint answered with an error; and the first refusal of
// each destination, not every repeat. The calls' costs add up to the session's report.
func TestSessionRecordsCallsAndRefusals(t *testing.T) {
	fake := modeltest.NewAnthropic(t, "sk-real")
	var rec recorded
	priced := func(model string, tk egress.Tokens) (float64, bool) {
		if model != "m" {
			return 0, false
		}
		return price(model, tk)
	}
	p := egress.New(egress.Config{Resolver: fixedResolver{"meta.example": "169.254.169.254"}})
	s, err := p.Open(egress.SessionConfig{TCP: true, MaxCostUSD: 0.006, Record: rec.add,
		Allow: egress.MustAllowlist("meta.example"),
		Model: &egress.Model{Protocol: egress.ProtocolAnthropic, BaseURL: fake.BaseURL(), Key: "sk-real", KeyVar: "K", BaseURLVar: "B", Model: "m", Price: priced}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(key, path, body string) int {
		t.Helper()
		req := modelRequest(t, s, egress.ProtocolAnthropic, path, body)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		key, path, body string
		want            int
	}{
		{"", "/v1/messages", `{"model":"m","stream":true}`, 200},
		{"", "/v1/nothing-here", `{"model":"m"}`, http.StatusForbidden}, // not a route the proxy meters
		{"guessed", "/v1/messages", `{"model":"m"}`, http.StatusUnauthorized},
		{"", "/v1/messages", `{"model":"dear"}`, http.StatusForbidden},
		{"", "/v1/messages", `{"model":"m","stream":false}`, 200},
		{"", "/v1/messages", `{"model":"m"}`, http.StatusForbidden}, // $0.0096 of the $0.006 are spent
	} {
		if got := call(c.key, c.path, c.body); got != c.want {
			t.Fatalf("%s %s with key %q: %d, want %d", c.path, c.body, c.key, got, c.want)
		}
	}
	client := proxied(t, s)
	for range 3 {
		if resp, err := client.Get("http://meta.example/latest/meta-data/"); err == nil {
			resp.Body.Close()
		}
	}
	rep := s.Close()

	var calls []timeline.ModelCall
	var refusals []timeline.Refusal
	var sum float64
	for _, ev := range rec.all() {
		switch {
		case ev.Kind == timeline.KindModelCall && ev.Call != nil:
			calls = append(calls, *ev.Call)
			sum += ev.Call.CostUSD
		case ev.Kind == timeline.KindEgressRefused && ev.Refusal != nil:
			refusals = append(refusals, *ev.Refusal)
		default:
			t.Errorf("unexpected event %+v", ev)
		}
	}
	if len(calls) != 6 {
		t.Fatalf("%d model calls recorded, want 6: %+v", len(calls), calls)
	}
	usd, _ := price("m", egress.Tokens{Input: fake.Usage.Input, Output: fake.Usage.Output})
	for i, want := range []struct {
		streamed bool
		status   int
		usd      float64
		refused  string
	}{
		{streamed: true, status: 200, usd: usd},
		{refused: egress.ReasonUnmetered},
		{refused: "does not carry this sandbox's key"},
		{refused: `model "dear" is not it and has no price`},
		{status: 200, usd: usd},
		{refused: "the budget of this attempt is spent"},
	} {
		c := calls[i]
		if c.Source != timeline.SourceProxy || c.Streamed != want.streamed || c.Status != want.status || math.Abs(c.CostUSD-want.usd) > 1e-12 ||
			(want.refused == "") != (c.Refused == "") || !strings.Contains(c.Refused, want.refused) {
			t.Errorf("call %d = %+v, want %+v", i+1, c, want)
		}
		if want.usd > 0 && (c.Model != "m" || c.InputTokens != fake.Usage.Input || c.OutputTokens != fake.Usage.Output ||
			c.CacheRead != fake.Usage.CacheRead || c.Duration <= 0 || c.Method != "POST" || c.Path != "/v1/messages" || c.Estimated) {
			t.Errorf("call %d = %+v, want the fake's usage %+v for model m on POST /v1/messages", i+1, c, fake.Usage)
		}
	}
	if math.Abs(sum-rep.CostUSD) > 1e-12 || rep.Calls != 2 {
		t.Errorf("the calls recorded cost $%v, the session's report says $%v for %d calls", sum, rep.CostUSD, rep.Calls)
	}
	if len(refusals) != 1 || refusals[0].Host != "meta.example" || refusals[0].Port != 80 || !strings.Contains(refusals[0].Reason, "link-local") {
		t.Errorf("refusals = %+v, want one of meta.example:80 (link-local) for its three tries", refusals)
	}
	// The report lists every refusal: the two calls the model route refused (the route's own, whose
	// fix the runner words for the path, and the unpriced model's with its prices: fix), and the
	// metadata address tried three times.
	if len(rep.Blocked) != 3 || rep.Blocked[0].Path != "/v1/nothing-here" || rep.Blocked[0].Reason != egress.ReasonUnmetered ||
		!strings.Contains(rep.Blocked[1].Fix, `prices: {"dear"`) || rep.Blocked[2].Host != "meta.example" || rep.Blocked[2].Count != 3 {
		t.Errorf("report's blocked = %+v", rep.Blocked)
	}
}
