package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/notify"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/templates"
)

// spendWarnAt is the share of a cap whose passing notifies the operator's sinks, once a month.
const spendWarnAt = 0.8

// spendCapActor is who pauses a run whose installation's month is spent.
const spendCapActor = "the monthly spend cap"

// spendCapReached says, in words for the run's summary, why run's installation may spend no more
// this month (its cap, spent by its runs' recorded costs); "" while it may, or when it has no cap or
// the spend cannot be read (a cap is a budget, not a reason to stop work Redis cannot account).
func (h *SpendCap) spendCapReached(ctx context.Context, run *lifecycle.Run) string {
	limit := h.d.Operator.Spend.CapFor(run.InstallationID)
	if limit <= 0 {
		return ""
	}
	now := time.Now().UTC()
	month := store.SpendMonth(now)
	spent, err := h.d.Store.InstallationSpend(ctx, run.InstallationID, month)
	if err != nil {
		return ""
	}
	if spent >= spendWarnAt*limit {
		// Also when one run took the month from under 80% to past the cap.
		h.warnSpend(ctx, run, spent, limit, month)
	}
	if spent < limit {
		return ""
	}
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return fmt.Sprintf("the monthly spend cap of this installation is reached: %s of %s in %s (UTC); it resets on %s, or the operator raises spend.monthly_usd",
		cost.Format(spent), cost.Format(limit), month, next.Format("2006-01-02"))
}

// warnSpend tells the operator's sinks (event spend_warning) that the installation's month is past
// spendWarnAt of its cap, once per installation and month.
func (h *SpendCap) warnSpend(ctx context.Context, run *lifecycle.Run, spent, limit float64, month string) {
	first, err := h.d.Store.WarnOnce(ctx, run.InstallationID, month)
	if err != nil || !first {
		return
	}
	h.pub.NotifyRun(ctx, run, notify.EventSpendWarning, month, templates.Notification{
		Reason: fmt.Sprintf("installation %d has spent %s of its %s cap for %s (%.0f%%)", run.InstallationID, cost.Format(spent), cost.Format(limit), month, 100*spent/limit)})
}
