package shotd

import "time"

// Usage counts an account's renders in one billing period.
type Usage struct {
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Used        int       `json:"used"`       // successes billed to the plan quota
	BonusUsed   int       `json:"bonus_used"` // successes billed past the quota, to bonus screenshots
	Succeeded   int       `json:"succeeded"`
	Failed      int       `json:"failed"`
	CacheHits   int       `json:"cache_hits"`
}

// UsageDelta is what one settled request (or a few) adds to the counts.
type UsageDelta struct{ Succeeded, Failed, CacheHits int }

// BillingPeriod returns the billing period [start, end) that contains now. Periods are monthly
// from the account's creation, in UTC: each starts on the day of the month the account was
// created at its time of day, or on the last day of a month that is too short (created on
// the 31st: the 28th or 29th of February, the 30th of April).
func BillingPeriod(created, now time.Time) (start, end time.Time) {
	created, now = created.UTC(), now.UTC()
	y, m := now.Year(), now.Month()
	start = anniversary(created, y, m)
	if now.Before(start) {
		y, m = addMonth(y, m, -1)
		start = anniversary(created, y, m)
	}
	y, m = addMonth(y, m, 1)
	return start, anniversary(created, y, m)
}

// anniversary is created's day and time of day in month m of year y, clamped to the month's end.
func anniversary(created time.Time, y int, m time.Month) time.Time {
	d := created.Day()
	if last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day(); d > last {
		d = last
	}
	return time.Date(y, m, d, created.Hour(), created.Minute(), created.Second(), created.Nanosecond(), time.UTC)
}

func addMonth(y int, m time.Month, n int) (int, time.Month) {
	t := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	return t.Year(), t.Month()
}

// DayUsage counts an account's renders on one UTC day.
type DayUsage struct {
	Date      string `json:"date"` // 2006-01-02, UTC
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	CacheHits int    `json:"cache_hits"`
}

// UsageReport is an account's usage and limits in its current billing period: the body of
// GET /api/v1/usage.
type UsageReport struct {
	Quota struct {
		Limit     int       `json:"limit"`
		Used      int       `json:"used"`
		Remaining int       `json:"remaining"`
		Bonus     int       `json:"bonus"`
		Reset     time.Time `json:"reset"`
	} `json:"quota"`
	PlanLimits
	Renders struct {
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		CacheHits int `json:"cache_hits"`
	} `json:"renders"`
	Jobs struct {
		Waiting int `json:"waiting"`
		Running int `json:"running"`
	} `json:"jobs"`
}
