package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/loopback"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/jobs/store"
)

// testStore is a store on the test Redis under a prefix of its own, and a locker beside it whose
// leases lapse quickly.
func testStore(t *testing.T) (*store.Store, func() *store.Locker) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "akira-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	return store.NewStore(rdb, prefix), func() *store.Locker {
		l := store.NewLocker(rdb, prefix)
		l.TTL = 300 * time.Millisecond
		return l
	}
}

// startRelay runs a relay with short waits until the test ends (or stop is called).
func startRelay(t *testing.T, st *store.Store, l *store.Locker, sink Sink, log *slog.Logger) (*Relay, func()) {
	t.Helper()
	r := &Relay{Stream: st, Locker: l, Sink: sink, Backoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		Block: 20 * time.Millisecond, Logger: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return r, stop
}

func audit(t *testing.T, st *store.Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := st.Audit(context.Background(), store.AuditEntry{Token: "ops", Via: store.ViaAPI, Action: "stop",
			RunID: fmt.Sprintf("r%02d", i), Result: "stop requested"}); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually waits for cond; the bound only ends a test that would wait forever.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// receiver is an HTTP sink's far end: it checks each event's signature and keeps those it took.
type receiver struct {
	t      *testing.T
	secret []byte
	// refuse answers 503 to this many requests first (a receiver starting up).
	refuse int

	mu     sync.Mutex
	events []Event
	bad    []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.refuse > 0 {
		rc.refuse--
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		rc.bad = append(rc.bad, "body: "+err.Error())
	}
	if got, want := req.Header.Get("X-Akira-Signature-256"), Sign(rc.secret, body); !hmac.Equal([]byte(got), []byte(want)) {
		rc.bad = append(rc.bad, fmt.Sprintf("event %s: signature %q, want %q", ev.ID, got, want))
	}
	if id := req.Header.Get("X-Akira-Event-Id"); id != ev.ID || id == "" {
		rc.bad = append(rc.bad, fmt.Sprintf("X-Akira-Event-Id %q, body id %q", id, ev.ID))
	}
	rc.events = append(rc.events, ev)
}

func (rc *receiver) got() []Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Event(nil), rc.events...)
}

// checkOnceInOrder: the events are runs r00..r(n-1), each once, in the stream's order.
func checkOnceInOrder(t *testing.T, evs []Event, n int) {
	t.Helper()
	if len(evs) != n {
		t.Errorf("%d events delivered; want %d", len(evs), n)
	}
	for i, ev := range evs {
		if want := fmt.Sprintf("r%02d", i); ev.RunID != want || ev.Actor != "ops" || ev.Via != store.ViaAPI {
			t.Errorf("event %d is %+v; want run %s by ops via API", i, ev, want)
		}
		if i > 0 && !idAfter(ev.ID, evs[i-1].ID) {
			t.Errorf("event %d's id %s does not follow %s", i, ev.ID, evs[i-1].ID)
		}
	}
}

// TestHTTPSinkDownThenUp: the receiver's address refuses connections for a while (a closed
// listener; its "minute" is many backoffs of a few milliseconds), entries are written before and
// during; when a server listens on the same address again and first answers 503, it then receives
// every event exactly once, in order, each signed. The sink's state is logged once down, once up.
func TestHTTPSinkDownThenUp(t *testing.T) {
	st, locker := testStore(t)
	// Below the ephemeral range: the address is listened on again later, and a port the kernel had
	// handed out could be an outgoing connection's by then.
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	secret := []byte("s3cret")
	audit(t, st, 0, 5)
	r, _ := startRelay(t, st, locker(), &HTTPSink{URL: "http://" + addr + "/audit", Secret: secret}, log)
	eventually(t, "the relay retried the closed address", func() bool { return r.Failures() >= 5 })
	audit(t, st, 5, 10)
	eventually(t, "more retries", func() bool { return r.Failures() >= 10 })
	if n, err := st.AuditBacklog(context.Background(), DefaultGroup); err != nil || n != 10 {
		t.Errorf("while down: backlog %d, %v; want 10 kept", n, err)
	}

	rc := &receiver{t: t, secret: secret, refuse: 2}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the sink's address again: %v", err)
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	eventually(t, "every entry acknowledged", func() bool {
		n, err := st.AuditBacklog(context.Background(), DefaultGroup)
		return err == nil && n == 0
	})
	checkOnceInOrder(t, rc.got(), 10)
	if len(rc.bad) > 0 {
		t.Errorf("bad deliveries: %v", rc.bad)
	}
	if r.Delivered() != 10 {
		t.Errorf("Delivered() = %d; want 10", r.Delivered())
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if d, u := strings.Count(out, "audit sink down"), strings.Count(out, "audit sink up"); d != 1 || u != 1 {
		t.Errorf("logged down %d times and up %d times over %d failures; want once each:\n%s", d, u, r.Failures(), out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestFileSinkRotates: a small size bound rotates the file many times; the files, oldest first,
// hold every event once, in order. A sink opened again on the file does not write again what the
// file already ends with (delivered, then not acknowledged before a crash).
func TestFileSinkRotates(t *testing.T) {
	st, locker := testStore(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := New(Config{Path: path, MaxSize: 600, Keep: 50})
	if err != nil {
		t.Fatal(err)
	}
	audit(t, st, 0, 30)
	startRelay(t, st, locker(), sink, nil)
	eventually(t, "every entry acknowledged", func() bool {
		n, err := st.AuditBacklog(context.Background(), DefaultGroup)
		return err == nil && n == 0
	})
	files, _ := filepath.Glob(path + ".*")
	if len(files) < 3 {
		t.Fatalf("rotated files %v; want several at 600 bytes each", files)
	}
	var evs []Event
	for i := len(files); i >= 0; i-- {
		p := path
		if i > 0 {
			p = fmt.Sprintf("%s.%d", path, i)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if info, _ := os.Stat(p); info.Size() > 600 {
			t.Errorf("%s is %d bytes; the bound is 600", filepath.Base(p), info.Size())
		}
		for line := range strings.Lines(string(data)) {
			var ev Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: %q: %v", filepath.Base(p), line, err)
			}
			evs = append(evs, ev)
		}
	}
	checkOnceInOrder(t, evs, 30)

	again, err := New(Config{Path: path, MaxSize: 600, Keep: 50})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := again.Deliver(context.Background(), evs[len(evs)-1]); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("the last event was written a second time after a restart")
	}
}

// TestFileSinkKeepsN: rotation keeps Keep files besides the current one, dropping the oldest.
func TestFileSinkKeepsN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s := &FileSink{Path: path, MaxSize: 200, Keep: 2}
	for i := range 40 {
		ev := Event{ID: fmt.Sprintf("%d-0", i+1), AuditEntry: store.AuditEntry{Action: "stop", RunID: fmt.Sprint(i)}}
		if err := s.Deliver(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(path + "*")
	if len(files) != 3 {
		t.Errorf("files %v; want the current one and 2 rotated", files)
	}
}

// TestTwoRelays: two relays on one stream deliver each entry once, in order; when the one
// delivering stops, the other takes over and goes on where it stopped.
func TestTwoRelays(t *testing.T) {
	st, locker := testStore(t)
	secret := []byte("k")
	rc := &receiver{t: t, secret: secret}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	sink := &HTTPSink{URL: "http://" + ln.Addr().String(), Secret: secret}
	a, stopA := startRelay(t, st, locker(), sink, nil)
	b, stopB := startRelay(t, st, locker(), sink, nil)
	audit(t, st, 0, 20)
	eventually(t, "20 delivered", func() bool { return len(rc.got()) >= 20 })
	// Stop whichever delivers: the other must carry on.
	first, other := stopA, b
	if b.Delivered() > 0 {
		first, other = stopB, a
	}
	first()
	audit(t, st, 20, 40)
	eventually(t, "every entry acknowledged", func() bool {
		n, err := st.AuditBacklog(context.Background(), DefaultGroup)
		return err == nil && n == 0 && len(rc.got()) >= 40
	})
	time.Sleep(50 * time.Millisecond) // room for a second copy to arrive, if one were sent
	checkOnceInOrder(t, rc.got(), 40)
	if other.Delivered() == 0 {
		t.Error("the remaining relay delivered nothing after the first stopped")
	}
	if a.Delivered()+b.Delivered() != 40 {
		t.Errorf("delivered %d + %d; want 40 in all", a.Delivered(), b.Delivered())
	}
}

// TestLoadConfig: each form of AKIRA_AUDIT_SINK, and each bad value named with what to write.
func TestLoadConfig(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    Config
		errWant []string
	}{
		{env: nil, want: Config{MaxSize: DefaultFileMax, Keep: DefaultFileKeep}},
		{env: map[string]string{"AKIRA_AUDIT_SINK": "file:/var/log/akira/audit.jsonl", "AKIRA_AUDIT_FILE_MAX": "1MiB", "AKIRA_AUDIT_FILE_KEEP": "3"},
			want: Config{Path: "/var/log/akira/audit.jsonl", MaxSize: 1 << 20, Keep: 3}},
		{env: map[string]string{"AKIRA_AUDIT_SINK": "https://siem.example.com/akira", "AKIRA_AUDIT_SECRET": "s"},
			want: Config{URL: "https://siem.example.com/akira", Secret: "s", MaxSize: DefaultFileMax, Keep: DefaultFileKeep}},
		{env: map[string]string{"AKIRA_AUDIT_SINK": "syslog://x"}, errWant: []string{"AKIRA_AUDIT_SINK", "file:/", "https://"}},
		{env: map[string]string{"AKIRA_AUDIT_SINK": "file:audit.jsonl"}, errWant: []string{"AKIRA_AUDIT_SINK", "absolute path"}},
		{env: map[string]string{"AKIRA_AUDIT_SINK": "https://siem.example.com/akira"}, errWant: []string{"AKIRA_AUDIT_SECRET", "set a secret"}},
		{env: map[string]string{"AKIRA_AUDIT_FILE_MAX": "big", "AKIRA_AUDIT_FILE_KEEP": "0"}, errWant: []string{"AKIRA_AUDIT_FILE_MAX", "AKIRA_AUDIT_FILE_KEEP"}},
	}
	for _, tc := range tests {
		c, err := LoadConfig(func(k string) string { return tc.env[k] })
		if tc.errWant == nil {
			if err != nil || c != tc.want {
				t.Errorf("%v: %+v, %v; want %+v", tc.env, c, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: no error", tc.env)
			continue
		}
		for _, w := range tc.errWant {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not say %q", tc.env, err, w)
			}
		}
	}
	if _, err := New(Config{Path: filepath.Join(t.TempDir(), "missing", "audit.jsonl")}); err == nil || !strings.Contains(err.Error(), "AKIRA_AUDIT_SINK") {
		t.Errorf("a file sink in a missing directory: %v; want an AKIRA_AUDIT_SINK error", err)
	}
}
