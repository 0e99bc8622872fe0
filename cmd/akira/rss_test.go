package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
)

// rssKiB reads a process's resident set size from /proc.
func rssKiB(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestRSSAfterMalformedDeliveries sends the real `akira serve` 2,000 deliveries a fuzzer would: bad
// signatures, bodies that are not JSON (40 of them 20 MB, signed so that they are read), and 1,000
// signed, well-formed ones naming installations GitHub does not know. It prints the process's RSS
// before and after, and fails when it grew by more than 12 MiB. Measured: 28-30 MiB before, 34-36 after.
// Without the bound on the installation client cache, each made-up installation kept about 10 KiB
// forever; without reading a body into one buffer of its declared length and giving a large body's
// memory back once it is handled, the 20 MB bodies left the process at 91-128 MiB.
func TestRSSAfterMalformedDeliveries(t *testing.T) {
	fake := githubtest.New(t)
	base, cmd, logs := startServe(t, fake, nil)
	before := rssKiB(t, cmd.Process.Pid)
	rng := rand.New(rand.NewPCG(1, 2))
	sign := func(body []byte) string {
		m := hmac.New(sha256.New, []byte("serve-secret"))
		m.Write(body)
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	for i := range 2000 {
		body := bytes.Repeat([]byte{'{'}, rng.IntN(256<<10))
		if i%50 == 3 {
			body = bytes.Repeat([]byte{'{'}, 20<<20)
		}
		if i%2 == 0 {
			// Well-formed, signed, naming an installation and a repository GitHub does not know.
			body = []byte(fmt.Sprintf(`{"action":"created","installation":{"id":%d},"repository":{"name":"r%d","full_name":"ghost/r%d","owner":{"login":"ghost"}},"sender":{"login":"eve","type":"User"},"issue":{"number":1},"comment":{"id":%d,"body":"/akira help","user":{"login":"eve","type":"User"}}}`, 1000+i, i, i, i+1))
		}
		req, _ := http.NewRequest("POST", base+"/webhook", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("fuzz-%d", i))
		if i%2 == 0 || i%3 == 0 || i%50 == 3 {
			req.Header.Set("X-Hub-Signature-256", sign(body))
		} else {
			req.Header.Set("X-Hub-Signature-256", "sha256=00")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	waitFor(t, "the intake jobs to be done", func() bool { return strings.Count(logs.String(), "intake: GitHub does not know") >= 1000 })
	after := rssKiB(t, cmd.Process.Pid)
	t.Logf("RSS before %.1f MiB, after 2,000 malformed deliveries %.1f MiB", float64(before)/1024, float64(after)/1024)
	if after-before > 12<<10 {
		t.Errorf("RSS grew by %.1f MiB, want at most 12", float64(after-before)/1024)
	}
}

// TestIdleRSS starts the real `akira serve` (webhook server and workers), lets it settle and reports
// its resident memory for `make bench` (goal: 40 MiB or less). It fails only far above that, at
// 64 MiB: a bound on memory, which does not depend on how busy the machine is.
func TestIdleRSS(t *testing.T) {
	fake := githubtest.New(t)
	_, cmd, _ := startServe(t, fake, nil)
	time.Sleep(3 * time.Second)
	rss := rssKiB(t, cmd.Process.Pid)
	t.Logf("akira-bench: serve.idle_rss.mib %.1f", float64(rss)/1024)
	if rss > 64<<10 {
		t.Errorf("idle RSS %.1f MiB; want at most 64", float64(rss)/1024)
	}
}
