package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUnsignedBodiesCannotGrowTheHeap: many large deliveries with a wrong signature, sent at once and
// held open one byte short of their end, cannot make the server hold more than its room for
// unverified bodies: the heap in use while they are all in flight stays under that room (plus a
// little for everything else), where reading each into memory would take one body each. The ones
// that found no room are answered 503 unread; the others are read, checked and refused 401.
func TestUnsignedBodiesCannotGrowTheHeap(t *testing.T) {
	const (
		size    = 4 << 20
		room    = 8 << 20 // two bodies at once
		senders = 16      // 64 MiB if each were read into memory
		slack   = 6 << 20 // everything else the server and the client hold meanwhile
	)
	h := newHarness(t, withServerConfig(func(c *ServerConfig) {
		c.MaxBodyBytes, c.UnverifiedBytes = size, room
	}))
	wrong := "sha256=" + strings.Repeat("0", 64)
	zeros := make([]byte, size)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	type sent struct {
		status int
		err    error
	}
	var (
		wg       sync.WaitGroup
		answers  = make([]chan sent, senders)
		inFlight = make([]chan struct{}, senders) // closed when the body's first size-1 bytes were read, or the request answered
		finish   = make(chan struct{})            // the test has measured: send the last bytes
	)
	for i := range senders {
		answers[i], inFlight[i] = make(chan sent, 1), make(chan struct{})
		pr, pw := io.Pipe()
		var once sync.Once
		signal := func() { once.Do(func() { close(inFlight[i]) }) }
		wg.Go(func() {
			// io.Pipe hands each byte to the server's read: this write returns once the server has
			// read all of it, and fails once the server has answered without reading.
			if _, err := pw.Write(zeros[:size-1]); err != nil {
				signal()
				return
			}
			signal()
			<-finish
			_, _ = pw.Write(zeros[size-1:])
			pw.Close()
		})
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhook", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("unsigned-%d", i))
		req.Header.Set("X-Hub-Signature-256", wrong)
		wg.Go(func() {
			resp, err := h.srv.Client().Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answers[i] <- sent{status: resp.StatusCode}
			} else {
				answers[i] <- sent{err: err}
			}
			signal()
			pr.CloseWithError(io.ErrClosedPipe)
		})
	}
	// Every request is now either being read (its bytes taken by the server) or answered unread; the
	// bound is a guard against a hang, not a measure of time.
	for i := range senders {
		select {
		case <-inFlight[i]:
		case <-time.After(time.Minute):
			close(finish)
			t.Fatalf("request %d neither read nor answered within a minute", i)
		}
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	close(finish)
	wg.Wait()

	statuses := map[int]int{}
	for i := range senders {
		a := <-answers[i]
		if a.err != nil {
			t.Fatalf("request %d: %v", i, a.err)
		}
		statuses[a.status]++
	}
	grown := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %.1f MiB with %d unsigned bodies of %d MiB in flight (room %d MiB); answers %v",
		float64(grown)/(1<<20), senders, size>>20, room>>20, statuses)
	if grown > room+slack {
		t.Errorf("the heap grew by %.1f MiB while unsigned bodies were in flight, more than the room for unverified bodies (%d MiB) and %d MiB",
			float64(grown)/(1<<20), room>>20, slack>>20)
	}
	if statuses[http.StatusUnauthorized] < room/size || statuses[http.StatusUnauthorized]+statuses[http.StatusServiceUnavailable] != senders {
		t.Errorf("answers %v: want at least %d read and refused 401, the others 503", statuses, room/size)
	}
	if got := h.enq.enqueued(); len(got) != 0 {
		t.Errorf("unsigned deliveries enqueued: %+v", got)
	}
	// Room is given back: a signed delivery is served after them.
	expect(t, h.send("ping", pingPayload()), http.StatusOK, resultAcknowledged)
}

// TestBodyWithoutLengthRefused: a body of undeclared length (chunked) cannot be given room before it
// is read, and GitHub always declares it: refused, unread.
func TestBodyWithoutLengthRefused(t *testing.T) {
	h := newHarness(t)
	body := pingPayload()
	req := h.gh.SignedWebhook(h.srv.URL+"/webhook", testSecret, "ping", "d-chunked", body)
	req.Body, req.ContentLength = io.NopCloser(io.MultiReader(bytes.NewReader(body))), -1
	expect(t, h.do(req), http.StatusLengthRequired, resultRejected)
}
