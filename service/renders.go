package service

import (
	"encoding/json"

	"github.com/shotd/shotd/httpd"
)

// renderLogMeta is the meta entry under which the dashboard's recent renders wait for the next
// start.
const renderLogMeta = "render_log"

// loadRenders fills the recent renders with those the last run saved at its stop.
func (s *Service) loadRenders() {
	v, ok, err := s.store.Meta(renderLogMeta)
	if err != nil || !ok {
		return
	}
	var entries []httpd.RenderEntry
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		s.log.Warn().Err(err).Msg("recent renders of the last run not read")
		return
	}
	s.renders.Load(entries)
}

// saveRenders keeps the recent renders for the next start; the listeners and the jobs have
// stopped, so the list is final. A run that is killed keeps those of the stop before.
func (s *Service) saveRenders() {
	if s.renders == nil || s.store == nil {
		return
	}
	b, err := json.Marshal(s.renders.Entries())
	if err == nil {
		err = s.store.SetMeta(renderLogMeta, string(b))
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("recent renders not saved")
	}
}
