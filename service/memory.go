package service

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/internal/proc"
)

// memoryBound prepares the memory cgroup of each Chrome (browser.memory_limit_mb) and returns
// the bound in MB with the cgroup to make them in; 0 and nil when there is none. Where the
// service may not make cgroups it says so once, at start: pages are then held only by the
// JavaScript heap cap and the renderer limit. Children that a killed run left are removed.
func memoryBound(ctx context.Context, cfg *config.Config, log zerolog.Logger) (int, *cgroup.Parent) {
	mb := cfg.Browser.MemoryLimit(proc.MemTotal())
	if mb == 0 {
		log.Info().Msg("no memory bound per Chrome (browser.memory_limit_mb is off): pages are held by browser.js_heap_mb and browser.renderer_process_limit only")
		return 0, nil
	}
	parent, err := cgroup.Open()
	if err != nil {
		log.Warn().Err(err).Int("memory_limit_mb", mb).Msg("the memory bound per Chrome is not enforced: the service may not make a memory cgroup (docs/security.md: Hostile pages); pages are held by browser.js_heap_mb and browser.renderer_process_limit only")
		return 0, nil
	}
	if n := parent.Sweep(ctx); n > 0 {
		log.Warn().Int("cgroups", n).Str("dir", parent.Dir()).Msg("removed the Chrome cgroups that a previous run left")
	}
	log.Info().Int("memory_limit_mb", mb).Str("cgroup", parent.Dir()).Msg("each Chrome's memory is bound by a cgroup")
	return mb, parent
}
