package cluster

import (
	"testing"

	"github.com/shotd/shotd"
)

// BenchmarkAdmission is the admission cost per render: one Admit and one Settle (a success) of a
// sync render, through the single node's account actors alone and through the cluster's Gate
// (the same actors, then a reservation and a bill in the ledger: two compare-and-swaps, each an
// fsynced write to every replica). Compare the ns/op of the sub-benchmarks.
func BenchmarkAdmission(b *testing.B) {
	plan := shotd.Plan{Name: "p", MonthlyQuota: 1 << 30,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1 << 30, StatusRequestsPerMinute: 1 << 30,
			Concurrency: 1 << 20, QueueLimit: 10, FailuresPerMinute: 1 << 20}}
	for _, tc := range []struct {
		name  string
		nodes int
	}{{"single_node", 0}, {"cluster_of_1", 1}, {"cluster_of_3", 3}} {
		b.Run(tc.name, func(b *testing.B) {
			var n *Node
			if tc.nodes > 0 {
				n = startCluster(b, tc.nodes)[0]
			}
			g := startGateNode(b, n, "n1")
			acc, err := g.st.CreateAccount("bench@example.test", "p", true)
			if err != nil {
				b.Fatal(err)
			}
			var adm Admitter = g.inner
			if g.gate != nil {
				adm = g.gate
			}
			b.ReportAllocs()
			for b.Loop() {
				r, _, err := adm.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := adm.Settle(acc.ID, r.Ticket, shotd.OutcomeSucceeded); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
