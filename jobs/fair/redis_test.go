package fair

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/internal/redistest"
)

func testRedis(t testing.TB) (*redis.Client, string) { return redistest.Prefixed(t) }
