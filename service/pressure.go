package service

import (
	"fmt"
	"os"

	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/pressure"
	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// Pressure is the gauge of this node's load that /pressure and the admin API serve; a cluster
// of nodes reads the same gauge.
func (s *Service) Pressure() pressure.Gauge {
	var jobs pressure.JobCounter = s.jobs
	if s.cluster != nil && s.cluster.jobs != nil {
		jobs = s.cluster.jobs // the jobs this node holds of the cluster's
	}
	return pressure.Gauge{Pool: s.renderer, Jobs: jobs, SlotsPerBrowser: s.cfg.Browser.RendersPerProcess}
}

// readyChecks are what /readyz checks beside the browser: the database answers and its file is
// there, data_dir has room for a few results, and ffmpeg (video formats only: not required) is
// still where it was found at start.
func (s *Service) readyChecks(programs Programs) []httpd.ReadyCheck {
	maxOutput := uint64(max(s.cfg.Limits.MaxOutputBytes, 0))
	db := s.store.DB()
	// Read at start: a closed bbolt forgets its path, and would show as a file gone rather than
	// as a database that does not answer.
	path := db.Path()
	return []httpd.ReadyCheck{
		{Name: "database", Required: true, Check: func() string {
			if _, err := os.Stat(path); err != nil {
				return "the database file is gone: " + err.Error()
			}
			if err := db.View(func(*bbolt.Tx) error { return nil }); err != nil {
				return "the database does not answer: " + err.Error()
			}
			return ""
		}},
		{Name: "disk", Required: true, Check: func() string {
			minFree := s.diskReserve.Load() + maxOutput
			var st unix.Statfs_t
			if err := unix.Statfs(s.cfg.DataDir, &st); err != nil {
				return "data_dir cannot be read: " + err.Error()
			}
			if free := st.Bavail * uint64(st.Bsize); free < minFree {
				return fmt.Sprintf("data_dir has %d MiB free, less than %d MiB", free>>20, minFree>>20)
			}
			return ""
		}},
		{Name: "ffmpeg", Check: func() string {
			if programs.FFmpeg == "" {
				return ""
			}
			if _, err := os.Stat(programs.FFmpeg); err != nil {
				return "ffmpeg is gone (" + err.Error() + "): mp4, webm and gif renders fail"
			}
			return ""
		}},
	}
}
