package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"
)

// slowModel answers like a streaming model: a first event after a think time, then a few dozen
// events a little apart, with the usage the proxy meters. Against an instant answer the ratio
// would measure the loopback, not what a model call costs.
func slowModel(think, gap time.Duration, events int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		time.Sleep(think)
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		fl.Flush()
		for i := 0; i < events; i++ {
			time.Sleep(gap)
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token %d \"}}\n\n", i)
			fl.Flush()
		}
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
}

// BenchmarkProxyOverhead measures a streamed model call through a sandbox's route (the forwarder's
// hop to the session's Unix socket, the key swap, the meter) against the same call made directly,
// interleaved so both see the same machine; it reports p50 and p99 of each (`make bench`).
func BenchmarkProxyOverhead(b *testing.B) {
	up := httptest.NewServer(slowModel(20*time.Millisecond, time.Millisecond, 40))
	defer up.Close()
	p := New(Config{Dir: b.TempDir()})
	s, err := p.Open(SessionConfig{Model: &Model{Protocol: ProtocolAnthropic, BaseURL: up.URL, Key: "k", KeyVar: "K", BaseURLVar: "B"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// What the forwarder does inside the sandbox: loopback TCP to the session's socket.
	fwd, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer fwd.Close()
	go func() {
		for {
			c, err := fwd.Accept()
			if err != nil {
				return
			}
			go func() {
				u, err := net.Dial("unix", s.Socket())
				if err != nil {
					c.Close()
					return
				}
				pipe(c, u)
			}()
		}
	}()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	call := func(url, key string) time.Duration {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"model":"m","stream":true}`))
		req.Header.Set("X-Api-Key", key)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return time.Since(start)
	}
	proxied := "http://" + fwd.Addr().String() + ModelPath + "/v1/messages"
	var direct, through []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		direct = append(direct, call(up.URL+"/v1/messages", "k"))
		through = append(through, call(proxied, s.Placeholder()))
	}
	b.StopTimer()
	if r := s.Report(); r.Calls != b.N || r.Tokens.Output != int64(40*b.N) {
		b.Fatalf("metered %+v for %d calls", r, b.N)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.Logf("akira-bench: proxy.p50.ms %.2f", ms(percentile(through, 50)))
	b.Logf("akira-bench: proxy.floor_p50.ms %.2f", ms(percentile(direct, 50)))
	b.Logf("akira-bench: proxy.p99.ms %.2f", ms(percentile(through, 99)))
	b.Logf("akira-bench: proxy.floor_p99.ms %.2f", ms(percentile(direct, 99)))
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(min(i, len(s))-1, 0)]
}
