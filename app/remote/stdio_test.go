package remote

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is what a server writes its answers to, read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Close() error { return nil }

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const pipedInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"sh","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
`

// runPiped runs server on requests that end, as `printf '…' | akira mcp` does, and returns what it
// wrote; the bound is a guard against a connection that never ends, not a measure of time.
func runPiped(t *testing.T, ctx context.Context, server *mcp.Server, requests string) string {
	t.Helper()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, AnsweringAll(&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(requests)), Writer: out}))
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the server still runs a minute after its input ended; it wrote:\n%s", out.String())
	}
	return out.String()
}

// TestAnsweringAllEndsWhenNoAnswerCanCome: the end of input is held back only while answers are owed:
// a tool that asks the client something (which cannot answer any more) ends the connection instead
// of waiting for ever, and so does the end of the server's context.
func TestAnsweringAllEndsWhenNoAnswerCanCome(t *testing.T) {
	t.Run("the server asks the client", func(t *testing.T) {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			_, err := req.Session.ListRoots(ctx, nil)
			return nil, nil, err
		})
		out := runPiped(t, context.Background(), s, pipedInit+`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`+"\n")
		if !strings.Contains(out, `"id":1,"result"`) || !strings.Contains(out, `"method":"roots/list"`) {
			t.Errorf("the server wrote:\n%s\nwant initialize answered and roots/list asked", out)
		}
	})
	t.Run("the server's context ends", func(t *testing.T) {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		started := make(chan struct{})
		mcp.AddTool(s, &mcp.Tool{Name: "hang"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			close(started)
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		out := runPiped(t, ctx, s, pipedInit+`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang","arguments":{}}}`+"\n")
		if !strings.Contains(out, `"id":1,"result"`) {
			t.Errorf("the server wrote:\n%s\nwant initialize answered", out)
		}
	})
}
