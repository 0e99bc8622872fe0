package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// Spend is what the model calls of runs cost, by installation, repository and month (UTC). It is
// counted as the run record changes: an update that raises its tasks' costs adds the difference
// in the same transaction, so the totals never drift from what the runs say they cost, and a run
// read again after a crash is not counted twice.
type Spend struct{ *conn }

// SpendRow is one installation's repository's cost in one month.
type SpendRow struct {
	Month          string  `json:"month"` // 2026-11
	InstallationID int64   `json:"installation_id"`
	Repo           string  `json:"repo"` // owner/name
	CostUSD        float64 `json:"cost_usd"`
}

// SpendMonth is the month a cost counts in: UTC, as "2006-01".
func SpendMonth(t time.Time) string { return t.UTC().Format("2006-01") }

func (c *conn) spendKey(month string) string { return c.prefix + "spend:" + month }
func (c *conn) spendMonthsKey() string       { return c.prefix + "spend:months" }

// spendRetention keeps a month's totals for two years: the operator's reports and the caps of
// this month need no more.
const spendRetention = 2 * 365 * 24 * time.Hour

// queueSpend adds usd to run's installation and repository for the month of at, in p.
func (c *conn) queueSpend(ctx context.Context, p redis.Pipeliner, r *lifecycle.Run, usd float64, at time.Time) {
	if usd <= 0 {
		return
	}
	month := SpendMonth(at)
	key := c.spendKey(month)
	p.HIncrByFloat(ctx, key, fmt.Sprintf("%d/%s/%s", r.InstallationID, r.Owner, r.Repo), usd)
	p.PExpire(ctx, key, spendRetention)
	p.SAdd(ctx, c.spendMonthsKey(), month)
}

// WarnOnce says whether installation's warning for month is still to be given, marking it given:
// true once per installation and month, however many processes ask.
func (s *Spend) WarnOnce(ctx context.Context, installationID int64, month string) (bool, error) {
	first, err := s.rdb.SetNX(ctx, fmt.Sprintf("%sspend:warned:%d:%s", s.prefix, installationID, month), "1", 40*24*time.Hour).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: spend: %w", err)
	}
	return first, nil
}

// Months lists the months with any spend, newest first.
func (s *Spend) Months(ctx context.Context) ([]string, error) {
	months, err := s.rdb.SMembers(ctx, s.spendMonthsKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: spend: %w", err)
	}
	slices.Sort(months)
	slices.Reverse(months)
	return months, nil
}

// SpendOf lists the spend of a month by installation and repository, the costliest first; every
// month's, newest first, when month is "".
func (s *Spend) SpendOf(ctx context.Context, month string) ([]SpendRow, error) {
	months := []string{month}
	if month == "" {
		var err error
		if months, err = s.Months(ctx); err != nil {
			return nil, err
		}
	} else if _, err := time.Parse("2006-01", month); err != nil {
		return nil, fmt.Errorf("jobs: spend: month %q is not YYYY-MM", month)
	}
	var out []SpendRow
	for _, m := range months {
		fields, err := s.rdb.HGetAll(ctx, s.spendKey(m)).Result()
		if err != nil {
			return nil, fmt.Errorf("jobs: spend: %w", err)
		}
		var rows []SpendRow
		for field, v := range fields {
			inst, repo, ok := strings.Cut(field, "/")
			id, err := strconv.ParseInt(inst, 10, 64)
			usd, ferr := strconv.ParseFloat(v, 64)
			if !ok || err != nil || ferr != nil {
				continue
			}
			rows = append(rows, SpendRow{Month: m, InstallationID: id, Repo: repo, CostUSD: usd})
		}
		slices.SortFunc(rows, func(a, b SpendRow) int {
			if a.CostUSD != b.CostUSD {
				if a.CostUSD > b.CostUSD {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Repo, b.Repo)
		})
		out = append(out, rows...)
	}
	return out, nil
}

// InstallationSpend is what an installation's runs cost in month, across its repositories: what a
// monthly cap is held against.
func (s *Spend) InstallationSpend(ctx context.Context, installationID int64, month string) (float64, error) {
	rows, err := s.SpendOf(ctx, month)
	if err != nil {
		return 0, err
	}
	var usd float64
	for _, r := range rows {
		if r.InstallationID == installationID {
			usd += r.CostUSD
		}
	}
	return usd, nil
}
