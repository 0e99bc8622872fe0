// Package audit delivers the audit stream (store.AuditTrail) to the operator's sink: a file of JSON
// lines that rotates, or an HTTP endpoint that receives each event signed. A Relay reads the stream
// through a consumer group and acknowledges an entry only once the sink has it, so a sink that is
// down loses nothing: its entries wait in Redis and are retried, in order.
package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
)

// Event is what a sink receives: an audit entry and its stream id, unique and increasing, which a
// receiver uses to drop a second copy (an entry delivered and not yet acknowledged when its relay
// died is delivered again).
type Event struct {
	ID string `json:"id"`
	store.AuditEntry
}

// Sink receives events one at a time, in order.
type Sink interface {
	Deliver(ctx context.Context, ev Event) error
	// String says where the sink is, without secrets, for logs.
	String() string
}

// Defaults of the file sink.
const (
	DefaultFileMax  = 100 << 20
	DefaultFileKeep = 10
)

// Config is the sink the operator chose (AKIRA_AUDIT_SINK and its companions); the zero Config is
// no sink.
type Config struct {
	// Path of a file sink, or URL of an HTTP one.
	Path, URL string
	// MaxSize rotates the file beyond this many bytes; Keep rotated files are kept.
	MaxSize int64
	Keep    int
	// Secret signs the HTTP sink's bodies.
	Secret string
}

// Enabled says a sink is configured.
func (c Config) Enabled() bool { return c.Path != "" || c.URL != "" }

// LoadConfig reads AKIRA_AUDIT_SINK (file:/path or an http(s):// URL), AKIRA_AUDIT_SECRET (needed by
// an HTTP sink), AKIRA_AUDIT_FILE_MAX and AKIRA_AUDIT_FILE_KEEP. Every bad value is named in the
// error, with what to write instead.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{MaxSize: DefaultFileMax, Keep: DefaultFileKeep}
	var errs []error
	v := getenv("AKIRA_AUDIT_SINK")
	switch {
	case v == "":
	case strings.HasPrefix(v, "file:"):
		p := strings.TrimPrefix(strings.TrimPrefix(v, "file:"), "//")
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("AKIRA_AUDIT_SINK: %q: a file sink needs an absolute path, e.g. file:/var/log/akira/audit.jsonl", v))
		}
		c.Path = filepath.Clean(p)
	case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"):
		if u, err := url.Parse(v); err != nil || u.Host == "" {
			errs = append(errs, fmt.Errorf("AKIRA_AUDIT_SINK: %q is not a URL: write https://host/path", v))
		}
		c.URL = v
		c.Secret = getenv("AKIRA_AUDIT_SECRET")
		if c.Secret == "" {
			errs = append(errs, errors.New("AKIRA_AUDIT_SECRET: an http(s) AKIRA_AUDIT_SINK signs every event: set a secret the receiver checks X-Akira-Signature-256 with"))
		}
	default:
		errs = append(errs, fmt.Errorf("AKIRA_AUDIT_SINK: %q is neither file:/path (JSON lines) nor an http(s):// URL: e.g. file:/var/log/akira/audit.jsonl or https://siem.example.com/akira", v))
	}
	if s := getenv("AKIRA_AUDIT_FILE_MAX"); s != "" {
		n, err := config.ParseSize(s)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("AKIRA_AUDIT_FILE_MAX: %q is not a size (e.g. 100MiB)", s))
		}
		c.MaxSize = n
	}
	if s := getenv("AKIRA_AUDIT_FILE_KEEP"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("AKIRA_AUDIT_FILE_KEEP: %q is not a positive number of rotated files", s))
		}
		c.Keep = n
	}
	return c, errors.Join(errs...)
}

// New makes the configured sink; nil when none is. A file sink's file is opened now, so a directory
// that does not exist is a start error, not a stream that never drains.
func New(c Config) (Sink, error) {
	switch {
	case c.Path != "":
		s := &FileSink{Path: c.Path, MaxSize: c.MaxSize, Keep: c.Keep}
		if err := s.open(); err != nil {
			return nil, fmt.Errorf("AKIRA_AUDIT_SINK: %w: make the directory or choose another path", err)
		}
		return s, nil
	case c.URL != "":
		return &HTTPSink{URL: c.URL, Secret: []byte(c.Secret)}, nil
	}
	return nil, nil
}

// FileSink appends events as JSON lines, synced before an event counts as delivered, and rotates
// the file beyond MaxSize: FILE.1 is the newest rotated file, FILE.Keep the oldest kept.
type FileSink struct {
	Path    string
	MaxSize int64
	Keep    int

	mu     sync.Mutex
	f      *os.File
	size   int64
	lastID string
}

func (s *FileSink) String() string { return "file:" + s.Path }

// open opens the file for appending and reads the id of its last line: an event already written
// (before a crash that kept it from being acknowledged) is not written twice.
func (s *FileSink) open() error {
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.size = f, st.Size()
	if id := lastID(s.Path); id != "" {
		s.lastID = id
	}
	return nil
}

// lastID is the id of the last complete line of a file ("" when none).
func lastID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	const tail = 64 << 10
	off := max(st.Size()-tail, 0)
	buf, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return ""
	}
	var id string
	sc := bufio.NewScanner(bytes.NewReader(buf))
	sc.Buffer(make([]byte, 0, tail), tail)
	for sc.Scan() {
		var ev struct{ ID string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.ID != "" {
			id = ev.ID
		}
	}
	return id
}

// Deliver writes the event's line.
func (s *FileSink) Deliver(_ context.Context, ev Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastID != "" && !idAfter(ev.ID, s.lastID) {
		return nil // written before a restart, not acknowledged then
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("audit file: %w", err)
	}
	line = append(line, '\n')
	if s.f == nil {
		if err := s.open(); err != nil {
			return fmt.Errorf("audit file: %w", err)
		}
	}
	if s.size > 0 && s.size+int64(len(line)) > s.MaxSize {
		if err := s.rotate(); err != nil {
			return fmt.Errorf("audit file: rotate: %w", err)
		}
	}
	n, err := s.f.Write(line)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// A line half written would precede its retry: cut it off.
		_ = s.f.Truncate(s.size)
		return fmt.Errorf("audit file: %w", err)
	}
	s.size += int64(n)
	s.lastID = ev.ID
	return nil
}

func (s *FileSink) rotate() error {
	if err := s.f.Close(); err != nil {
		return err
	}
	s.f = nil
	keep := max(s.Keep, 1)
	if err := os.Remove(fmt.Sprintf("%s.%d", s.Path, keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for i := keep - 1; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", s.Path, i), fmt.Sprintf("%s.%d", s.Path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(s.Path, s.Path+".1"); err != nil {
		return err
	}
	return s.open()
}

// Close closes the file.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// idAfter says stream id a comes after b ("ms-seq", compared as numbers).
func idAfter(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am > bm || (am == bm && as > bs)
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	n, _ := strconv.ParseUint(seq, 10, 64)
	return m, n
}

// HTTPSink POSTs each event as one JSON body, signed with X-Akira-Signature-256 (sha256=hex of the
// body's HMAC-SHA256 under Secret, as GitHub signs webhooks) and named by X-Akira-Event-Id. Any 2xx
// is delivered; anything else is retried.
type HTTPSink struct {
	URL    string
	Secret []byte
	// Client defaults to one with a 10 s timeout.
	Client *http.Client
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

func (s *HTTPSink) String() string {
	if u, err := url.Parse(s.URL); err == nil {
		u.User, u.RawQuery = nil, ""
		return u.String()
	}
	return "http sink"
}

// Sign is the X-Akira-Signature-256 value of a body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Deliver posts the event.
func (s *HTTPSink) Deliver(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("audit http: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("audit http: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "akira-audit")
	req.Header.Set("X-Akira-Event-Id", ev.ID)
	req.Header.Set("X-Akira-Signature-256", Sign(s.Secret, body))
	c := s.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("audit http: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("audit http: %s answered %s", s, resp.Status)
	}
	return nil
}
