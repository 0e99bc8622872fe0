package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/notify"
)

// sinkReceiver stands in for Slack, Discord, ntfy or a team's webhook receiver: it records what
// arrives and when, after answering the first `fail` requests with 503.
type sinkReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []received
	fail int
}

type received struct {
	at     time.Time
	header http.Header
	body   string
}

func newSinkReceiver(t *testing.T, ok, fail int) *sinkReceiver {
	r := &sinkReceiver{fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fail > 0 {
			r.fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.got = append(r.got, received{at: time.Now(), header: req.Header.Clone(), body: string(body)})
		w.WriteHeader(ok)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *sinkReceiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// TestNotifications: an escalation reaches every sink kind the operator routes it to (ntfy after a
// 503 it is retried over), a finished run goes where the repository chose, and each delivery's
// latency from the event is printed.
func TestNotifications(t *testing.T) {
	slack, discord := newSinkReceiver(t, 200, 0), newSinkReceiver(t, 204, 0)
	ntfy, hook := newSinkReceiver(t, 200, 1), newSinkReceiver(t, 200, 0)
	t.Setenv("E2E_SLACK_URL", slack.srv.URL+"/services/T0/B0/secret")
	t.Setenv("E2E_DISCORD_URL", discord.srv.URL+"/api/webhooks/1/secret")
	t.Setenv("E2E_HOOK_SECRET", "hook-secret")
	op := "notify:\n  sinks:\n" +
		"    team: {kind: slack, url_env: E2E_SLACK_URL}\n" +
		"    chat: {kind: discord, url_env: E2E_DISCORD_URL}\n" +
		"    phone: {kind: ntfy, url: " + ntfy.srv.URL + "/akira-alerts}\n" +
		"    pager: {kind: webhook, url: " + hook.srv.URL + "/akira, secret_env: E2E_HOOK_SECRET}\n" +
		"  events:\n    escalation: [team, chat, phone, pager]\n    run_finished: [team]\n"
	e := newEnvWith(t, false, redisAddr(t), op)
	e.createRepo(map[string]string{"README.md": "# demo\n", ".github/akira.yml": "notify:\n  run_finished: [pager]\n"})
	e.gh.AddIssue(e.owner, e.repo, githubtest.Issue{Number: 1, Title: "Flaky", User: "alice", Body: "- [ ] Add a flaky thing\n"})
	e.comment(1, "alice", "/akira run", false, http.StatusAccepted)
	run := e.waitStatus(1, lifecycle.StatusParked)
	pr := e.onlyPR(run.Branch)

	e.eventually("the escalation at every sink", func() bool {
		return len(slack.all()) == 1 && len(discord.all()) == 1 && len(ntfy.all()) == 1 && len(hook.all()) == 1
	})
	var m notify.Message
	if err := json.Unmarshal([]byte(hook.all()[0].body), &m); err != nil {
		t.Fatal(err)
	}
	if m.Event != "escalation" || m.TaskID != "1.1" || m.RunID != run.ID || m.URL != run.PRURL || !strings.Contains(m.Reply, "/akira retry") {
		t.Errorf("webhook payload %+v", m)
	}
	for name, r := range map[string]*sinkReceiver{"slack": slack, "discord": discord, "ntfy (after one 503)": ntfy, "webhook": hook} {
		t.Logf("notification latency, event to %s: %s", name, r.all()[0].at.Sub(m.Time).Round(time.Millisecond))
	}
	h := hook.all()[0]
	mac := hmac.New(sha256.New, []byte("hook-secret"))
	mac.Write([]byte(h.body))
	if h.header.Get("X-Akira-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
		t.Error("the webhook's signature does not verify")
	}
	if n := ntfy.all()[0]; n.header.Get("Priority") != "high" || n.header.Get("Click") != run.PRURL {
		t.Errorf("ntfy headers %v", n.header)
	}
	if !strings.Contains(slack.all()[0].body, "needs a decision on 1.1") || !strings.Contains(discord.all()[0].body, `"allowed_mentions":{"parse":[]}`) {
		t.Errorf("slack %s\ndiscord %s", slack.all()[0].body, discord.all()[0].body)
	}

	e.comment(pr.Number, "alice", "/akira retry the flaky things need the MAGIC-WORD in their prompt", true, http.StatusAccepted)
	e.waitStatus(1, lifecycle.StatusSucceeded)
	e.eventually("the finished run at the repository's sink", func() bool { return len(hook.all()) == 2 })
	if err := json.Unmarshal([]byte(hook.all()[1].body), &m); err != nil || m.Event != "run_finished" || !strings.Contains(m.Text, "1 passed") {
		t.Errorf("second webhook %s (%v)", hook.all()[1].body, err)
	}
	e.queueIdle()
	if n := len(slack.all()); n != 1 {
		t.Errorf("slack got %d notifications; the repository routed run_finished to pager only", n)
	}
}
