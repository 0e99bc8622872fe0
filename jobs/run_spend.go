package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
)

// spendCapActor is who pauses a run whose installation's month is spent.
const spendCapActor = "the monthly spend cap"

// spendCapReached says, in words for the run's summary, why run's installation may spend no more
// this month (its cap, spent by its runs' recorded costs); "" while it may, or when it has no cap or
// the spend cannot be read (a cap is a budget, not a reason to stop work Redis cannot account).
func (h *Runs) spendCapReached(ctx context.Context, run *lifecycle.Run) string {
	limit := h.d.Operator.Spend.CapFor(run.InstallationID)
	if limit <= 0 {
		return ""
	}
	now := time.Now().UTC()
	month := store.SpendMonth(now)
	spent, err := h.d.Store.InstallationSpend(ctx, run.InstallationID, month)
	if err != nil || spent < limit {
		return ""
	}
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return fmt.Sprintf("the monthly spend cap of this installation is reached: %s of %s in %s (UTC); it resets on %s, or the operator raises spend.monthly_usd",
		cost.Format(spent), cost.Format(limit), month, next.Format("2006-01-02"))
}
