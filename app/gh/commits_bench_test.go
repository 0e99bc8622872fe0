package gh_test

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkCheckpointPush is the cost of publishing one checkpoint of n changed files to the fake
// GitHub: with git push, and through the API (GitHub signs it; the workspace then fetches GitHub's
// commit). Run with: go test -run '^$' -bench BenchmarkCheckpointPush -benchtime 5x ./app/gh/
func BenchmarkCheckpointPush(b *testing.B) {
	for _, files := range []int{1, 200} {
		for _, via := range []string{"git", "api"} {
			b.Run(fmt.Sprintf("files=%d/%s", files, via), func(b *testing.B) {
				e := newEnv(b, map[string]string{"README.md": "# hello\n"}, nil)
				ctx := context.Background()
				w := e.clone(b, "akira/bench")
				api := e.c.SignedCommits(owner, repo)
				b.ResetTimer()
				for round := 0; round < b.N; round++ {
					b.StopTimer()
					for i := range files {
						writeFile(b, w.Dir, fmt.Sprintf("d/f%03d.txt", i), []byte(fmt.Sprintf("%d %d\n", round, i)), 0o644)
					}
					checkpoint(b, w, fmt.Sprint(round))
					b.StartTimer()
					var err error
					if via == "api" {
						_, err = w.PushAPI(ctx, api)
					} else {
						err = w.Push(ctx)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
