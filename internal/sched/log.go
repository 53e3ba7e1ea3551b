package sched

import (
	"context"
	"log/slog"
)

// LogDecision logs d as every program that decides writes it: message
// "scheduled" with the keys feed_id, state, decision, next_at,
// reason, ewma_secs, error_budget and retry_after_secs, and fetch_id after
// feed_id when the decision answers a fetch ("" for a nudge), at level:
// feed-store logs one per feed and run, at debug; feed-sub the one a
// person asked for, at info. Next itself never logs.
func LogDecision(log *slog.Logger, level slog.Level, feedID, fetchID string, d Decision) {
	ctx := context.Background()
	if !log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs, slog.String("feed_id", feedID))
	if fetchID != "" {
		attrs = append(attrs, slog.String("fetch_id", fetchID))
	}
	attrs = append(attrs,
		slog.String("state", string(d.State)),
		slog.String("decision", string(d.Kind)),
		slog.String("next_at", d.NextAt.String()),
		slog.String("reason", string(d.Reason)),
		slog.Float64("ewma_secs", d.Inputs.EWMASecs),
		slog.Float64("error_budget", d.Inputs.ErrorBudget),
		slog.Int("retry_after_secs", d.Inputs.RetryAfterSecs))
	log.LogAttrs(ctx, level, "scheduled", attrs...)
}
