package httpd

import (
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// TestLimitHeadersRoundUp: reset times in whole seconds never come before the real ones, so a
// client that waits until X-RateLimit-Reset is not refused again.
func TestLimitHeadersRoundUp(t *testing.T) {
	tests := []struct {
		name             string
		reset            time.Time
		wantRate         string
		wantQuotaISO8601 string
	}{
		{name: "fraction rounds up", reset: time.Unix(1_800_000_000, 400_000_000), wantRate: "1800000001", wantQuotaISO8601: "2027-01-15T08:00:01Z"},
		{name: "whole second stays", reset: time.Unix(1_800_000_000, 0), wantRate: "1800000000", wantQuotaISO8601: "2027-01-15T08:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			setLimitHeaders(&ctx, shotd.LimitsSnapshot{RateLimit: 60, RateReset: tt.reset, QuotaReset: tt.reset}, true)
			if got := string(ctx.Response.Header.Peek("X-RateLimit-Reset")); got != tt.wantRate {
				t.Errorf("X-RateLimit-Reset %s, want %s", got, tt.wantRate)
			}
			if got := string(ctx.Response.Header.Peek("X-Quota-Reset")); got != tt.wantQuotaISO8601 {
				t.Errorf("X-Quota-Reset %s, want %s", got, tt.wantQuotaISO8601)
			}
		})
	}
}
