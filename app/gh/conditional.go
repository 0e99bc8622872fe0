package gh

import (
	"bytes"
	"container/list"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Conditional reads: GitHub answers a GET whose If-None-Match names the resource's current ETag with
// 304 Not Modified, which does not count against the installation's rate limit. The reads Akira
// repeats (the CI of a pull request while it waits, the comments it looks through for its markers, the
// repository's configuration) are sent conditionally with the ETag of the last answer, and a 304 is
// served from that answer.

// Bounds of the read cache, shared by every installation of the App: its memory must not grow with the
// number of installations or of resources read.
const (
	maxCachedReadBytes = 4 << 20
	maxCachedReadBody  = 256 << 10
)

// readCache keeps the last 200 answer (with an ETag) of GET requests, least recently used dropped first.
type readCache struct {
	mu    sync.Mutex
	bytes int
	lru   *list.List // of *cachedRead, most recently used at the front
	byKey map[string]*list.Element
}

type cachedRead struct {
	key    string
	etag   string
	header http.Header
	body   []byte
}

func newReadCache() *readCache {
	return &readCache{lru: list.New(), byKey: map[string]*list.Element{}}
}

func (c *readCache) get(key string) *cachedRead {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cachedRead)
}

func (c *readCache) put(e *cachedRead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[e.key]; el != nil {
		c.bytes -= len(el.Value.(*cachedRead).body)
		c.lru.Remove(el)
	}
	c.byKey[e.key] = c.lru.PushFront(e)
	c.bytes += len(e.body)
	for c.bytes > maxCachedReadBytes {
		last := c.lru.Back()
		old := last.Value.(*cachedRead)
		c.lru.Remove(last)
		delete(c.byKey, old.key)
		c.bytes -= len(old.body)
	}
}

func (c *readCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.bytes -= len(el.Value.(*cachedRead).body)
		c.lru.Remove(el)
		delete(c.byKey, key)
	}
}

// conditionalTransport sends an installation's GETs with the ETag of their last answer and turns a 304
// into that answer, so that go-github sees a 200 either way.
type conditionalTransport struct {
	next  http.RoundTripper
	cache *readCache
	// scope keeps installations apart: what one may read says nothing of what another may.
	scope string
}

func (t *conditionalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" || req.Header.Get("Range") != "" {
		return t.next.RoundTrip(req)
	}
	key := t.scope + " " + req.Header.Get("Accept") + " " + req.URL.String()
	prev := t.cache.get(key)
	out := req
	if prev != nil {
		out = req.Clone(req.Context())
		out.Header.Set("If-None-Match", prev.etag)
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && prev != nil:
		drain(resp)
		header := prev.header.Clone()
		// The rate-limit figures of the 304 are the current ones.
		for k, vs := range resp.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
				header[k] = vs
			}
		}
		header.Set("Content-Length", strconv.Itoa(len(prev.body)))
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
			Header: header, Body: io.NopCloser(bytes.NewReader(prev.body)), ContentLength: int64(len(prev.body)), Request: req,
		}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxCachedReadBody+1))
		if err != nil || len(body) > maxCachedReadBody {
			// Too big to keep (or cut short): the caller reads it as it comes.
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
			t.cache.drop(key)
			return resp, nil
		}
		_ = resp.Body.Close()
		t.cache.put(&cachedRead{key: key, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body})
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	case resp.StatusCode >= 400:
		t.cache.drop(key)
	}
	return resp, nil
}
