package store

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// TestSpendFollowsTheRunRecord: what a run's tasks cost is counted by installation, repository and
// month as the record changes: only what a change adds, once, in the month of the change; a change
// that fails adds nothing, and a cost that goes down takes nothing back (the money was spent).
func TestSpendFollowsTheRunRecord(t *testing.T) {
	rdb, prefix := testRedis(t)
	s := NewStore(rdb, prefix)
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	mk := func(id string, inst int64, repo string) {
		t.Helper()
		r := &lifecycle.Run{ID: id, Owner: "octo", Repo: repo, InstallationID: inst, Branch: "b-" + id, Status: lifecycle.StatusRunning,
			Tasks: []*lifecycle.TaskState{{ID: "1.1", Title: "One"}, {ID: "1.2", Title: "Two"}}}
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	cost := func(id string, task int, usd float64) {
		t.Helper()
		if _, err := s.Update(ctx, id, func(r *lifecycle.Run) error { r.EditTask(r.Tasks[task].ID).CostUSD = usd; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", 7, "web")
	mk("b", 7, "api")
	mk("c", 9, "web")
	cost("a", 0, 0.50)
	cost("a", 0, 0.75) // the same task's cost grows: +0.25
	cost("a", 1, 0.10)
	cost("a", 1, 0.05) // goes down: nothing taken back
	cost("b", 0, 2)
	cost("c", 1, 0.30)
	if _, err := s.Update(ctx, "c", func(r *lifecycle.Run) error { r.EditTask("1.1").CostUSD = 100; return errors.New("refused") }); err == nil {
		t.Fatal("the failing change was stored")
	}
	now = now.Add(2 * time.Hour) // December
	cost("c", 1, 0.50)

	nov, err := s.SpendOf(ctx, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	want := []SpendRow{{"2026-11", 7, "octo/api", 2}, {"2026-11", 7, "octo/web", 0.85}, {"2026-11", 9, "octo/web", 0.30}}
	if len(nov) != len(want) {
		t.Fatalf("November: %+v, want %+v", nov, want)
	}
	for i := range want {
		if nov[i].Month != want[i].Month || nov[i].InstallationID != want[i].InstallationID || nov[i].Repo != want[i].Repo ||
			math.Abs(nov[i].CostUSD-want[i].CostUSD) > 1e-9 {
			t.Errorf("November row %d: %+v, want %+v", i, nov[i], want[i])
		}
	}
	if usd, err := s.InstallationSpend(ctx, 7, "2026-11"); err != nil || math.Abs(usd-2.85) > 1e-9 {
		t.Errorf("installation 7 in November: $%v, %v; want $2.85", usd, err)
	}
	if usd, err := s.InstallationSpend(ctx, 9, "2026-12"); err != nil || math.Abs(usd-0.20) > 1e-9 {
		t.Errorf("installation 9 in December: $%v, %v; want $0.20", usd, err)
	}
	if months, err := s.Months(ctx); err != nil || len(months) != 2 || months[0] != "2026-12" {
		t.Errorf("months = %v, %v", months, err)
	}
	if all, err := s.SpendOf(ctx, ""); err != nil || len(all) != 4 || all[0].Month != "2026-12" {
		t.Errorf("every month: %+v, %v", all, err)
	}
	if _, err := s.SpendOf(ctx, "november"); err == nil {
		t.Error("a month that is not YYYY-MM was read")
	}
}
