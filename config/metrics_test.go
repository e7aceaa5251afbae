package config

import "testing"

// TestMetricsNeedToken: by default /metrics asks for the admin token unless the admin listener
// is only reachable from the host itself, so that no other host reads the series without it.
func TestMetricsNeedToken(t *testing.T) {
	tests := []struct {
		name, auth, listen string
		want               bool
	}{
		{"auto on loopback v4", MetricsAuto, "127.0.0.1:8081", false},
		{"auto on loopback v6", MetricsAuto, "[::1]:8081", false},
		{"auto on localhost", MetricsAuto, "localhost:8081", false},
		{"auto on every address", MetricsAuto, "0.0.0.0:8081", true},
		{"auto on an empty host", MetricsAuto, ":8081", true},
		{"auto on a LAN address", MetricsAuto, "10.1.2.3:8081", true},
		{"auto on a host name", MetricsAuto, "admin.internal:8081", true},
		{"token on loopback", MetricsToken, "127.0.0.1:8081", true},
		{"open everywhere", MetricsOpen, "0.0.0.0:8081", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.MetricsAuth, c.AdminListen = tt.auth, tt.listen
			if got := c.MetricsNeedToken(); got != tt.want {
				t.Fatalf("MetricsNeedToken() = %v, want %v", got, tt.want)
			}
		})
	}
}
