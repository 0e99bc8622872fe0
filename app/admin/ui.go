package admin

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/timeline"
	"github.com/akira-bot/akira/templates"
)

// The dashboard is server-rendered html/template pages, one {{define}} per file. Its one script,
// ui/tick.js (served from here, the only script the pages' policy allows), moves the durations of
// running tasks; the pages read the same without it.
// A person logs in with an operator token; the session cookie holds the token's hash, an expiry and
// a MAC (HttpOnly, SameSite=Strict, Secure over HTTPS), so revoking the token ends its sessions.
// Every form that acts carries a CSRF token derived from the session.

//go:embed ui/*.html ui/tick.js
var uiFiles embed.FS

var uiFuncs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return time.Since(t).Round(time.Second).String()
	},
	// since and eta read the fair queue's times: how long a run has been running, when a waiting
	// one is expected to start.
	"since": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return time.Since(*t).Round(time.Second).String()
	},
	"eta": func(t *time.Time) string {
		if t == nil {
			return "not known yet"
		}
		if d := time.Until(*t); d > time.Second {
			return "in " + d.Round(time.Second).String()
		}
		return "next"
	},
	"dur": func(d time.Duration) string { return d.Round(time.Second).String() },
	"usd": cost.Format,
	// duration is a timeline's offset or an attempt's length, as the CLI prints them.
	"duration": timeline.FormatDuration,
	"inc":      func(i int) int { return i + 1 },
	"words":    words,
	"plain":    plainWords,
	// rfc3339 is a time a script reads (tick.js).
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"elapsed": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return time.Since(t).Round(time.Second).String()
	},
	"pendingAge": func(q QueueInfo) string {
		if q.Pending == 0 {
			return "—"
		}
		return (time.Duration(q.OldestPendingSecs) * time.Second).String()
	},
	"pct":  func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"path": url.PathEscape,
	// decisionArgs hands the decision template its run, the form's CSRF token and the decision.
	"decisionArgs": func(runID, csrf string, d decision) map[string]any {
		return map[string]any{"RunID": runID, "CSRF": csrf, "D": d}
	},
	"states": func() []string {
		out := make([]string, len(runStatuses))
		for i, s := range runStatuses {
			out[i] = string(s)
		}
		return out
	},
}

// parseUI parses the dashboard's templates; NewServer fails on an error instead of ignoring it.
func parseUI() (*template.Template, error) {
	return template.New("ui").Funcs(uiFuncs).ParseFS(uiFiles, "ui/*.html")
}

const (
	sessionCookie = "akira_session"
	sessionTTL    = 12 * time.Hour
)

func (s *server) routesUI(r *gin.Engine) error {
	tmpl, err := parseUI()
	if err != nil {
		return fmt.Errorf("admin: dashboard templates: %w", err)
	}
	s.ui = tmpl
	r.GET("/ui", func(c *gin.Context) { c.Redirect(http.StatusFound, "/ui/") })
	r.GET("/ui/login", s.loginPage)
	tick, err := uiFiles.ReadFile("ui/tick.js")
	if err != nil {
		return fmt.Errorf("admin: dashboard script: %w", err)
	}
	r.GET("/ui/static/tick.js", func(c *gin.Context) {
		c.Header("Cache-Control", "max-age=3600")
		c.Data(http.StatusOK, "text/javascript; charset=utf-8", tick)
	})
	r.POST("/ui/login", s.login)
	ui := r.Group("/ui", s.uiAuth)
	ui.POST("/logout", s.csrf, s.logout)
	ui.GET("/", s.runsPage)
	ui.GET("/runs/:id", s.runPage)
	ui.GET("/runs/:id/tasks/:task", s.taskPage)
	ui.GET("/runs/:id/tasks/:task/attempts/:n/log", s.logPage)
	ui.GET("/queue", s.queuePage)
	ui.GET("/spend", s.spendPage)
	ui.GET("/spend.csv", s.spendCSV)
	ui.GET("/escalations", s.escalationsPage)
	ui.POST("/runs/:id/:action", s.csrf, s.uiControl)
	return nil
}

// mac signs parts with the session key ("" when the key cannot be read: nothing verifies then).
func (s *server) mac(ctx context.Context, parts ...string) string {
	s.keyMu.Lock()
	key := s.key
	s.keyMu.Unlock()
	if key == nil {
		k, err := s.d.Store.SessionKey(ctx)
		if err != nil || len(k) == 0 {
			return ""
		}
		s.keyMu.Lock()
		s.key, key = k, k
		s.keyMu.Unlock()
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *server) setSession(c *gin.Context, tokenHash string) {
	exp := strconv.FormatInt(s.d.Now().Add(sessionTTL).Unix(), 10)
	value := tokenHash + "." + exp + "." + s.mac(c, "session", tokenHash, exp)
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionCookie, Value: value, Path: "/ui", MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, Secure: s.d.SecureCookies, SameSite: http.SameSiteStrictMode})
}

// session checks the cookie and returns its token and the cookie's value.
func (s *server) session(c *gin.Context) (store.Token, string, bool) {
	ck, err := c.Request.Cookie(sessionCookie)
	if err != nil {
		return store.Token{}, "", false
	}
	parts := strings.Split(ck.Value, ".")
	if len(parts) != 3 {
		return store.Token{}, "", false
	}
	want := s.mac(c, "session", parts[0], parts[1])
	if want == "" || !hmac.Equal([]byte(want), []byte(parts[2])) {
		return store.Token{}, "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || s.d.Now().Unix() > exp {
		return store.Token{}, "", false
	}
	tok, err := s.d.Store.TokenByHash(c, parts[0])
	if err != nil {
		return store.Token{}, "", false
	}
	return tok, ck.Value, true
}

func (s *server) uiAuth(c *gin.Context) {
	tok, value, ok := s.session(c)
	if !ok {
		c.Redirect(http.StatusSeeOther, "/ui/login?next="+url.QueryEscape(c.Request.URL.RequestURI()))
		c.Abort()
		return
	}
	c.Set("token", tok)
	c.Set("csrf", s.mac(c, "csrf", value))
	c.Next()
}

// csrf refuses a form without the session's CSRF token.
func (s *server) csrf(c *gin.Context) {
	want, _ := c.Get("csrf")
	w, _ := want.(string)
	if w == "" || !hmac.Equal([]byte(w), []byte(c.PostForm("csrf"))) {
		c.Abort()
		s.render(c, http.StatusForbidden, "error", page{Title: "Refused", Error: "The form's CSRF token is missing or wrong: reload the page and try again."})
		return
	}
	c.Next()
}

// page is what every dashboard page gets: who is logged in, the CSRF token, and the page's data.
type page struct {
	Title  string
	Token  store.Token
	CSRF   string
	Flash  string
	Error  string
	Next   string
	Data   any
	Filter map[string]string
}

func (s *server) render(c *gin.Context, status int, name string, p page) {
	if t, ok := c.Get("token"); ok {
		p.Token, _ = t.(store.Token)
	}
	if v, ok := c.Get("csrf"); ok {
		p.CSRF, _ = v.(string)
	}
	p.Flash, p.Error = firstNonEmpty(p.Flash, c.Query("done")), firstNonEmpty(p.Error, c.Query("error"))
	c.Header("Content-Type", "text/html; charset=utf-8")
	// The pages show code and text strangers wrote: no inline script runs, none is loaded from
	// elsewhere; the dashboard's own tick.js is the one script.
	c.Header("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "same-origin")
	c.Status(status)
	if err := s.ui.ExecuteTemplate(c.Writer, name, p); err != nil {
		s.log.Error("admin: render", "page", name, "err", err)
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// safeNext keeps a redirect after login on the dashboard.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") {
		return next
	}
	return "/ui/"
}

func (s *server) loginPage(c *gin.Context) {
	s.render(c, http.StatusOK, "login", page{Title: "Log in", Next: safeNext(c.Query("next"))})
}

func (s *server) login(c *gin.Context) {
	secret := strings.TrimSpace(c.PostForm("token"))
	tok, err := s.d.Store.TokenFor(c, secret)
	if err != nil {
		status := http.StatusUnauthorized
		msg := "That token is not valid."
		if !errors.Is(err, store.ErrBadToken) {
			status, msg = http.StatusServiceUnavailable, "Tokens cannot be checked now; try again."
		}
		s.render(c, status, "login", page{Title: "Log in", Error: msg, Next: safeNext(c.PostForm("next"))})
		return
	}
	if len(tok.Repos) > 0 {
		// The dashboard shows every repository's runs and queues; a token limited to some has the API.
		s.render(c, http.StatusForbidden, "login", page{Title: "Log in", Error: "That token is limited to repositories; the dashboard needs a token for all of them (the API serves this one).",
			Next: safeNext(c.PostForm("next"))})
		return
	}
	s.setSession(c, store.TokenHash(secret))
	s.log.Info("admin: dashboard login", "token", tok.Name)
	c.Redirect(http.StatusSeeOther, safeNext(c.PostForm("next")))
}

func (s *server) logout(c *gin.Context) {
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionCookie, Value: "", Path: "/ui", MaxAge: -1, HttpOnly: true,
		Secure: s.d.SecureCookies, SameSite: http.SameSiteStrictMode})
	c.Redirect(http.StatusSeeOther, "/ui/login")
}

func (s *server) runsPage(c *gin.Context) {
	f, err := filterOf(c)
	if err != nil {
		s.render(c, http.StatusBadRequest, "error", page{Title: "Runs", Error: err.Error()})
		return
	}
	if f.Limit == 0 {
		f.Limit = runsPerPage
	}
	pg, err := s.d.Store.RunsPage(c, f)
	if errors.Is(err, store.ErrBadCursor) {
		s.render(c, http.StatusBadRequest, "error", page{Title: "Runs", Error: "That page of runs is not one Akira listed; start again from the first page."})
		return
	}
	if err != nil {
		s.render(c, http.StatusServiceUnavailable, "error", page{Title: "Runs", Error: "Runs cannot be read now."})
		return
	}
	v := runsView{}
	for _, r := range pg.Runs {
		v.Runs = append(v.Runs, rowOf(r))
	}
	if pg.Next != "" {
		q := c.Request.URL.Query()
		q.Set("cursor", pg.Next)
		v.Older = "/ui/?" + q.Encode()
	}
	if f.Cursor != "" {
		q := c.Request.URL.Query()
		q.Del("cursor")
		v.Newest = "/ui/?" + q.Encode()
	}
	s.render(c, http.StatusOK, "runs", page{Title: "Runs", Data: v,
		Filter: map[string]string{"repo": c.Query("repo"), "state": c.Query("state")}})
}

// runsPerPage is how many runs a page of the dashboard's list shows.
const runsPerPage = 50

// runsView is the runs page's data: a page of runs and the links to the next (older) one and back
// to the first.
type runsView struct {
	Runs          []runRow
	Older, Newest string
}

// runView is the run page's data.
type runView struct {
	Run     RunDetail
	Name    runName
	Working bool
	// Paused: the run waits to be resumed.
	Paused bool
	Over   bool
	// Decisions are the tasks that need a decision, with what a person needs to decide.
	Decisions []decision
	// TaskStarted is when the running task started (zero when none runs).
	TaskStarted time.Time
	// StoppedBy, PausedBy and AbortedBy say who; Continue is where `/akira run` continues a stopped run.
	StoppedBy, PausedBy, AbortedBy, Continue string
	// ContinueOn names what Continue links: "the pull request" or "the issue".
	ContinueOn string
}

func (s *server) runPage(c *gin.Context) {
	run := s.runOf(c, false)
	if run == nil {
		return
	}
	v := runView{Run: detailOf(run), Name: nameOf(run), Working: run.Status == lifecycle.StatusRunning || run.Status == lifecycle.StatusQueued,
		Over: run.Status.Terminal(), Paused: run.Status == lifecycle.StatusPaused, Decisions: s.decisionsOf(c, run),
		StoppedBy: templates.Who(run.StoppedBy), PausedBy: templates.Who(run.PausedBy), AbortedBy: templates.Who(run.AbortedBy)}
	if run.Status == lifecycle.StatusRunning {
		v.TaskStarted = run.TaskStartedAt
	}
	v.Continue, v.ContinueOn = run.PRURL, "the pull request"
	if v.Continue == "" {
		v.Continue, v.ContinueOn = v.Name.RefURL, "the issue"
	}
	s.render(c, http.StatusOK, "run", page{Title: v.Name.Title + " " + v.Name.Ref, Data: v})
}

// taskView is the task page's data: the task and its attempts' log links.
type taskView struct {
	RunID string
	Repo  string
	Run   runName
	Task  TaskDetail
	// Started is when the task, running now, started (zero otherwise).
	Started time.Time
	// Decision is set when the task needs one.
	Decision *decision
	// Attempts are the task's attempts as their timelines tell them, the latest last.
	Attempts []attemptView
}

// attemptView is one attempt's timeline on the task page: each event in words, when it happened
// from the attempt's start and what the attempt had cost by then, and the files it changed.
type attemptView struct {
	N      int
	LogURL string
	// Result is the attempt's end in words ("checkpointed abc1234", "failed: …"); "" while it runs
	// or when its end was not recorded (its worker died).
	Result string
	Cost   float64
	Took   time.Duration
	Rows   []timelineRow
	Files  []timeline.File
	// Kept is false when no timeline was kept (expired, or an attempt of a worker older than it).
	Kept bool
}

type timelineRow struct {
	At        time.Duration
	Kind      timeline.Kind
	Step      string
	What      string
	CostSoFar float64
	// Tail is a failed verification command's end of output.
	Tail string
}

// attemptsOf reads the timelines of a task's attempts.
func (s *server) attemptsOf(c *gin.Context, runID string, t TaskDetail) []attemptView {
	var out []attemptView
	for _, l := range t.Logs {
		a := attemptView{N: l.Attempt, LogURL: "/ui/runs/" + url.PathEscape(runID) + "/tasks/" + url.PathEscape(t.ID) + "/attempts/" + strconv.Itoa(l.Attempt) + "/log"}
		raw, err := s.d.Store.Timeline(c, runID, t.ID, l.Attempt)
		if err != nil {
			s.log.Warn("admin: read timeline", "run", runID, "task", t.ID, "attempt", l.Attempt, "err", err)
		}
		var start time.Time
		for _, line := range raw {
			var ev timeline.Event
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			if start.IsZero() {
				start = ev.Time
			}
			a.Kept = true
			if ev.End != nil {
				// The engine's summary marks commands as code; the page says them in words.
				end := *ev.End
				end.Summary = strings.ReplaceAll(end.Summary, "`", "")
				ev.End = &end
			}
			step, what := timeline.Describe(ev)
			row := timelineRow{At: ev.Time.Sub(start), Kind: ev.Kind, Step: step, What: what, CostSoFar: ev.CostUSD}
			switch {
			case ev.Command != nil && !ev.Command.Passed:
				row.Tail = ev.Command.Tail
			case ev.File != nil:
				a.Files = append(a.Files, *ev.File)
			case ev.End != nil:
				// The summary line says how it ended; its cost and length have their own places.
				a.Result, a.Took = ev.End.Result, ev.End.Duration
				if ev.End.Commit != "" {
					a.Result += " " + shortCommit(ev.End.Commit)
				}
				if ev.End.Summary != "" {
					a.Result += ": " + ev.End.Summary
				}
			}
			a.Cost = ev.CostUSD
			a.Rows = append(a.Rows, row)
		}
		out = append(out, a)
	}
	return out
}

func (s *server) taskPage(c *gin.Context) {
	run := s.runOf(c, false)
	if run == nil {
		return
	}
	for _, t := range detailOf(run).Tasks {
		if t.ID != c.Param("task") {
			continue
		}
		v := taskView{RunID: run.ID, Repo: run.Owner + "/" + run.Repo, Run: nameOf(run), Task: t, Attempts: s.attemptsOf(c, run.ID, t)}
		if t.Status == lifecycle.TaskStatusRunning && run.Status == lifecycle.StatusRunning {
			v.Started = run.TaskStartedAt
		}
		for _, d := range s.decisionsOf(c, run) {
			if d.TaskID == t.ID {
				v.Decision = &d
			}
		}
		s.render(c, http.StatusOK, "task", page{Title: "Task " + t.ID + ": " + t.Title, Data: v})
		return
	}
	c.AbortWithStatus(http.StatusNotFound)
}

// logView is the log page's data.
type logView struct {
	RunID, TaskID string
	Attempt       int
	Text          string
}

func (s *server) logPage(c *gin.Context) {
	text, ok := s.readLog(c)
	if !ok {
		return
	}
	n, _ := strconv.Atoi(c.Param("n"))
	s.render(c, http.StatusOK, "log", page{Title: "Log", Data: logView{RunID: c.Param("id"), TaskID: c.Param("task"), Attempt: n, Text: text}})
}

// spendView is the spend page: a month's costs by installation and repository, and the months
// there are.
type spendView struct {
	Month  string
	Months []string
	Rows   []store.SpendRow
	Total  float64
}

func (s *server) spendPage(c *gin.Context) {
	month := c.Query("month")
	if month == "" {
		month = store.SpendMonth(time.Now())
		c.Request.URL.RawQuery = "month=" + month
	}
	rows, ok := s.spendOf(c)
	if !ok {
		return
	}
	v := spendView{Month: month, Rows: rows}
	for _, r := range rows {
		v.Total += r.CostUSD
	}
	if ms, ok := s.d.Store.(interface {
		Months(ctx context.Context) ([]string, error)
	}); ok {
		v.Months, _ = ms.Months(c)
	}
	s.render(c, http.StatusOK, "spend", page{Title: "Spend", Data: v})
}

func (s *server) spendCSV(c *gin.Context) {
	if rows, ok := s.spendOf(c); ok {
		writeSpendCSV(c, rows)
	}
}

func (s *server) queuePage(c *gin.Context) {
	st, err := s.queueState(c, nil)
	if err != nil {
		s.render(c, http.StatusServiceUnavailable, "error", page{Title: "Queue", Error: "The queue cannot be read now."})
		return
	}
	s.render(c, http.StatusOK, "queue", page{Title: "Queue", Data: st})
}

// escalation is a task waiting for a person, with how long it has waited.
type escalation struct {
	Run    RunSummary
	Name   runName
	Title  string
	Why    template.HTML
	Parked ParkedTask
}

func (s *server) escalationsPage(c *gin.Context) {
	runs, err := s.d.Store.Runs(c, store.RunFilter{Status: []lifecycle.RunStatus{lifecycle.StatusParked}, Limit: 1000})
	if err != nil {
		s.render(c, http.StatusServiceUnavailable, "error", page{Title: "Escalations", Error: "Runs cannot be read now."})
		return
	}
	var rows []escalation
	for _, r := range runs {
		for _, p := range r.Parked {
			e := escalation{Run: summaryOf(r), Name: nameOf(r), Why: plainWords(reasonWords(p.Reason, p.Summary)),
				Parked: ParkedTask{TaskID: p.TaskID, Reason: p.Reason, Summary: p.Summary, Since: p.At}}
			if t := r.Task(p.TaskID); t != nil {
				e.Title = t.Title
			}
			rows = append(rows, e)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Parked.Since.Before(rows[j].Parked.Since) }) // longest waiting first
	s.render(c, http.StatusOK, "escalations", page{Title: "Needs a decision", Data: rows})
}

func (s *server) uiControl(c *gin.Context) {
	tok := tokenOf(c)
	action := c.Param("action")
	back := "/ui/runs/" + url.PathEscape(c.Param("id"))
	if !tok.CanControl() {
		c.Redirect(http.StatusSeeOther, back+"?error="+url.QueryEscape("token "+tok.Name+" may only read; "+action+" needs a control token"))
		return
	}
	switch action {
	case intake.ActionStop, intake.ActionAbort, intake.ActionRetry, intake.ActionApprove, intake.ActionSkip, intake.ActionPause, intake.ActionResume:
	default:
		c.AbortWithStatus(http.StatusNotFound)
		return
	}
	req := intake.ControlRequest{RunID: c.Param("id"), Action: action, TaskID: c.PostForm("task_id"), Guidance: c.PostForm("guidance"),
		Token: tok, Via: "dashboard", RequestID: strconv.FormatInt(time.Now().UnixNano(), 36), Now: c.PostForm("now") == "1"}
	result, err := s.d.Controller.Control(c, req)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.AbortWithStatus(http.StatusNotFound)
	case err != nil:
		msg := err.Error()
		if !errors.Is(err, intake.ErrNotNow) {
			s.log.Error("admin: control action failed", "run", req.RunID, "action", action, "err", err)
			msg = "the action could not be carried out now; try again"
		}
		c.Redirect(http.StatusSeeOther, back+"?error="+url.QueryEscape(msg))
	default:
		c.Redirect(http.StatusSeeOther, back+"?done="+url.QueryEscape(result))
	}
}

func shortCommit(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
