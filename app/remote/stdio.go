package remote

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AnsweringAll wraps an MCP transport so that the end of its input ends the connection only once
// every request read before it has been answered. The SDK takes the end of stdin for the end of the
// whole connection and drops the answers of the requests still being handled
// (modelcontextprotocol/go-sdk#1061): `printf '…' | akira mcp` answered nothing, not even
// initialize. A client closing its end means it sends no more, not that it stopped reading.
//
// The SDK's stdio connection refuses JSON-RPC batches once a session has negotiated 2025-06-18 or
// later, through a hook only its own types can implement; behind this wrapper a batch is read as in
// earlier versions.
func AnsweringAll(t mcp.Transport) mcp.Transport { return answeringAll{t} }

type answeringAll struct{ inner mcp.Transport }

func (t answeringAll) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, connected: ctx, pending: map[jsonrpc.ID]bool{}, changed: make(chan struct{}), closed: make(chan struct{})}, nil
}

// answeringConn counts the requests read and not answered yet, and holds back the end of input until
// there are none.
type answeringConn struct {
	mcp.Connection
	// connected is the context the server runs in (Server.Run's): when it ends, nothing is held back,
	// so that the SDK cancels the requests still being handled.
	connected context.Context

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	// calling says the server sent the client a request of its own: with the input ended, no answer
	// can come, so the end of input is no longer held back.
	calling bool
	// changed is closed (and replaced) whenever pending or calling changes.
	changed   chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.update(func() { c.pending[req.ID] = true })
		}
		return msg, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	for {
		c.mu.Lock()
		waiting, changed := len(c.pending) > 0 && !c.calling, c.changed
		c.mu.Unlock()
		if !waiting {
			return nil, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, err
		case <-c.connected.Done():
			return nil, err
		case <-c.closed:
			return nil, err
		}
	}
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.update(func() { delete(c.pending, m.ID) })
	case *jsonrpc.Request:
		if m.IsCall() {
			c.update(func() { c.calling = true })
		}
	}
	return err
}

func (c *answeringConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

func (c *answeringConn) update(change func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	change()
	close(c.changed)
	c.changed = make(chan struct{})
}
