package egress

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// trickle hands out a body n bytes at a time, as a slow client's upload arrives.
type trickle struct {
	r io.Reader
	n int
}

func (t *trickle) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), t.n)]) }

// The model a request asks for is its top-level "model", wherever it stands and however the body
// arrives; a body the proxy cannot read a model from, or that names it twice (a provider might
// read the second), is refused; the body the provider gets is the client's, byte for byte, and the
// proxy holds nothing of it once it is sent.
func TestRequestedModel(t *testing.T) {
	big := strings.Repeat(`{"role":"user","content":"model \"claude-mythos-5\" {[}]"},`, 2000)
	tests := []struct {
		name, body string
		header     string
		want       string
		// err is why the request is refused: before it is sent, or, when what gives it away comes
		// later than the model, by failing its upload before the provider has all of it.
		err error
	}{
		{name: "model first", body: `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}`, want: "claude-sonnet-4-5"},
		{name: "after the conversation", body: `{"messages":[` + big + `{}], "stream": true, "model" : "gpt-5"}`, want: "gpt-5"},
		{name: "escaped key and value", body: `{"mod\u0065l":"gpt-\u0035","n":1}`, want: "gpt-5"},
		{name: "nested models are not the call's", body: `{"metadata":{"model":"x"},"tools":[{"model":"y"}],"model":"z"}`, want: "z"},
		{name: "no model", body: `{"messages":[]}`, want: ""},
		{name: "no body", body: "", want: ""},
		{name: "not an object", body: `["model","x"]`, err: errNotObject},
		{name: "a byte order mark", body: "\xef\xbb\xbf{\"model\":\"x\"}", err: errNotObject},
		{name: "compressed", body: `{"model":"x"}`, header: "gzip", err: errEncodedRequest},
		{name: "twice", body: `{"model":"claude-sonnet-4-5","model":"claude-mythos-5"}`, err: errSecondModel},
		{name: "twice, the first not a string", body: `{"model":null,"model":"claude-mythos-5"}`, err: errSecondModel},
		{name: "twice, far apart", body: `{"model":"claude-sonnet-4-5","messages":[` + big + `{}],"model":"claude-mythos-5"}`, err: errSecondModel},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 7, 1 << 20} {
			var held atomic.Int64
			r, err := http.NewRequest(http.MethodPost, "http://proxy/v1/messages", &trickle{r: strings.NewReader(tt.body), n: n})
			if err != nil {
				t.Fatal(err)
			}
			if tt.body == "" {
				r.Body = http.NoBody
			}
			if tt.header != "" {
				r.Header.Set("Content-Encoding", tt.header)
			}
			sc := newBodyScan(&Model{Protocol: ProtocolAnthropic}, "/v1/messages", false)
			release, err := sc.hold(r, &held)
			model := sc.model
			var sent []byte
			if err == nil {
				if sent, err = io.ReadAll(r.Body); err == nil && model != tt.want {
					t.Errorf("%s, %d bytes at a time: model %q, want %q", tt.name, n, model, tt.want)
				}
				if err == nil && !bytes.Equal(sent, []byte(tt.body)) {
					t.Errorf("%s: the body sent differs from the client's", tt.name)
				}
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("%s, %d bytes at a time: %v, want %v", tt.name, n, err, tt.err)
			}
			release()
			if held.Load() != 0 {
				t.Errorf("%s, %d bytes at a time: %d bytes still held", tt.name, n, held.Load())
			}
		}
	}
}

// What a session holds to find models is bounded, per request and across its requests.
func TestRequestedModelBounds(t *testing.T) {
	var held atomic.Int64
	huge := `{"messages":"` + strings.Repeat("x", maxModelPrefix) + `","model":"gpt-5"}`
	r, _ := http.NewRequest(http.MethodPost, "http://proxy/v1/chat/completions", strings.NewReader(huge))
	if _, err := newBodyScan(&Model{Protocol: ProtocolOpenAI}, "/chat/completions", false).hold(r, &held); !errors.Is(err, errPrefixTooLarge) || held.Load() != 0 {
		t.Errorf("a model past %d MiB: %v, %d bytes held; want %v and none", maxModelPrefix>>20, err, held.Load(), errPrefixTooLarge)
	}
	held.Store(maxSessionPrefixes - 10)
	r, _ = http.NewRequest(http.MethodPost, "http://proxy/v1/chat/completions", strings.NewReader(`{"messages":[],"model":"gpt-5"}`))
	if _, err := newBodyScan(&Model{Protocol: ProtocolOpenAI}, "/chat/completions", false).hold(r, &held); !errors.Is(err, errPrefixesBusy) || held.Load() != maxSessionPrefixes-10 {
		t.Errorf("past the session's bound: %v, %d held; want %v", err, held.Load(), errPrefixesBusy)
	}
}
