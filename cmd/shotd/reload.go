package main

import (
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/sdnotify"
)

// reloader rereads the config file on SIGHUP and hands it to the service, which applies the
// [plans] tables and log.level (service.Service.Reload) and logs what needs a restart.
type reloader struct {
	path   string   // --config; "" (embedded defaults) rereads only the environment
	env    []string // the environment serve started with
	svc    interface{ Reload(*config.Config) error }
	notify sdnotify.Notifier
}

// reload reads and applies the config, telling systemd while it does. A config that does not
// load, or that the service refuses, changes nothing: the running one stays.
func (r *reloader) reload() error {
	_ = r.notify.Notify(sdnotify.Reloading, sdnotify.Status("reloading"))
	defer func() { _ = r.notify.Notify(sdnotify.Ready, sdnotify.Status("serving")) }()
	next, err := config.Load(r.path, r.env)
	if err != nil {
		return err
	}
	return r.svc.Reload(next)
}
