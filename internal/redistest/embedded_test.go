package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEmbedded: the embedded server answers over TCP to its password only, lets keys expire on the
// wall clock (miniredis alone never ages them: leases and locks would live forever), and is gone
// once stopped.
func TestEmbedded(t *testing.T) {
	addr, stop, err := Embedded("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	stranger := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { stranger.Close() })
	if err := stranger.Set(ctx, "k", "v", 0).Err(); err == nil {
		t.Error("a connection without the password was served")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Set(ctx, "lease", "worker-1", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	// Waiting for the expiry, not timing it: the bound only ends a test that would wait forever.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		n, err := rdb.Exists(ctx, "lease").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a key with a TTL never expired")
		}
	}
	stop()
	stop() // a second stop does nothing
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("the embedded server still answers after stop")
	}
}
