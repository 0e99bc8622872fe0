package jobs

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
)

func testRedis(t testing.TB) (*redis.Client, string) { return redistest.Prefixed(t) }

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
