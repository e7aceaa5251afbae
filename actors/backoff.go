package actors

import "time"

// backoff returns the delay before attempt n (0-based) of something that failed n times in a
// row (a Chrome launch, a job's render that found no browser free): 250 ms doubling to 10 s,
// so that a fault that persists costs little and one that clears is retried soon.
func backoff(n int) time.Duration {
	d := 250 * time.Millisecond
	for i := 0; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

const maxBackoff = 10 * time.Second
