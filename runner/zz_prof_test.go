package runner

import (
	"context"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"testing"

	"github.com/akira-bot/akira/runner/gittest"
)

func TestZZProf(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZ_N"))
	from, _ := strconv.Atoi(os.Getenv("ZZ_FROM"))
	repo := gittest.New(t, map[string]string{"ROADMAP.md": benchRoadmap(n)})
	count := 0
	var f *os.File
	rep := ReporterFunc(func(_ context.Context, ev Event) error {
		if ev.Type == EventTaskStarted {
			count++
			if count == from {
				f, _ = os.Create(os.Getenv("ZZ_OUT"))
				pprof.StartCPUProfile(f)
			}
			if count == from+100 && f != nil {
				pprof.StopCPUProfile()
				f.Close()
				f = nil
			}
		}
		return nil
	})
	out, err := Run(context.Background(), Options{Repo: repo.Remote, Agent: writeAgent{}, Verify: []string{"true"}, WorkDir: t.TempDir(),
		Reporter: rep, Logger: slog.New(slog.DiscardHandler)})
	if f != nil {
		pprof.StopCPUProfile()
	}
	if err != nil || out.Status != StatusSucceeded {
		t.Fatal(err, out.Status)
	}
}
