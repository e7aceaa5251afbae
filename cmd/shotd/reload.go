package main

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/sdnotify"
	"github.com/shotd/shotd/store"
)

// reloader applies a new reading of the config file on SIGHUP: the [plans] tables and log.level.
// Everything else is read once at start; a change to it is reported as needing a restart.
type reloader struct {
	path   string   // --config; "" (embedded defaults) rereads only the environment
	env    []string // the environment serve started with
	cur    *config.Config
	plans  *httpd.PlanBook
	store  *store.Store
	notify sdnotify.Notifier
	log    zerolog.Logger
}

// reload reads and applies the config. A config that does not load, or that drops a plan an
// account still has, is refused whole: the running one stays.
func (r *reloader) reload() error {
	_ = r.notify.Notify(sdnotify.Reloading, sdnotify.Status("reloading"))
	defer func() { _ = r.notify.Notify(sdnotify.Ready, sdnotify.Status("serving")) }()
	next, err := config.Load(r.path, r.env)
	if err != nil {
		return err
	}
	if err := r.plansInUse(next); err != nil {
		return err
	}
	r.plans.Set(next.Plans)
	zerolog.SetGlobalLevel(next.Log.ZerologLevel())
	restart := restartKeys(r.cur, next)
	// What still needs a restart keeps its running value, so the next reload compares with that.
	kept := *r.cur
	kept.Plans, kept.Log.Level = next.Plans, next.Log.Level
	r.cur = &kept
	ev := r.log.Info().Int("plans", len(next.Plans)).Str("log_level", next.Log.Level)
	if len(restart) > 0 {
		ev = r.log.Warn().Int("plans", len(next.Plans)).Strs("restart_needed", restart)
	}
	ev.Msg("configuration reloaded")
	return nil
}

// plansInUse refuses a config without the plan of some account: its requests would all fail.
func (r *reloader) plansInUse(next *config.Config) error {
	after := ""
	for {
		accs, err := r.store.Accounts(after, 500)
		if err != nil {
			return err
		}
		for _, a := range accs {
			if _, ok := next.Plans[a.Plan]; !ok {
				return fmt.Errorf("plans.%s: account %s has this plan; move it first (shotd admin account update %s --plan P)", a.Plan, a.ID, a.ID)
			}
		}
		if len(accs) < 500 {
			return nil
		}
		after = accs[len(accs)-1].ID
	}
}

// restartKeys names the keys whose new value differs and that a reload does not apply.
func restartKeys(cur, next *config.Config) []string {
	var out []string
	a, b := reflect.ValueOf(*cur), reflect.ValueOf(*next)
	t := a.Type()
	for i := range t.NumField() {
		name := tomlName(t.Field(i))
		if name == "" {
			continue // plans: applied
		}
		fa, fb := a.Field(i), b.Field(i)
		if fa.Kind() != reflect.Struct {
			if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
				out = append(out, name)
			}
			continue
		}
		for j := range fa.NumField() {
			sub := name + "." + tomlName(fa.Type().Field(j))
			if sub != "log.level" && !reflect.DeepEqual(fa.Field(j).Interface(), fb.Field(j).Interface()) {
				out = append(out, sub)
			}
		}
	}
	slices.Sort(out)
	return out
}

func tomlName(f reflect.StructField) string {
	tag := f.Tag.Get("toml")
	if tag == "-" {
		return ""
	}
	return tag
}
