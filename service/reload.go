package service

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/config"
)

// Reload applies next, a new reading of the configuration (as config.Load returns it): the
// [plans] tables and log.level. Everything else is read once at Open; a change to it is logged
// as needing a restart. A config that drops a plan an account still has is refused whole: the
// running one stays.
func (s *Service) Reload(next *config.Config) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if err := s.plansInUse(next); err != nil {
		return err
	}
	s.plans.Set(next.Plans)
	zerolog.SetGlobalLevel(next.Log.ZerologLevel())
	cur := s.applied
	if cur == nil {
		cur = s.cfg
	}
	restart := restartKeys(cur, withStartToken(next))
	// What still needs a restart keeps its running value, so the next reload compares with that.
	kept := *cur
	kept.Plans, kept.Log.Level = next.Plans, next.Log.Level
	s.applied = &kept
	ev := s.log.Info().Int("plans", len(next.Plans)).Str("log_level", next.Log.Level)
	if len(restart) > 0 {
		ev = s.log.Warn().Int("plans", len(next.Plans)).Strs("restart_needed", restart)
	}
	ev.Msg("configuration reloaded")
	return nil
}

// plansInUse refuses a config without the plan of some account: its requests would all fail.
func (s *Service) plansInUse(next *config.Config) error {
	after := ""
	for {
		accs, err := s.accountList().Accounts(after, 500)
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
// withStartToken is next with the admin token a start would take when next names none: the one
// generated into data_dir at the first start (bootstrap), which the running config holds; else a
// reload of an unchanged file would ask for a restart for admin_token.
func withStartToken(next *config.Config) *config.Config {
	if next.AdminToken != "" {
		return next
	}
	b, err := os.ReadFile(filepath.Join(next.DataDir, adminTokenFile))
	if err != nil {
		return next
	}
	c := *next
	c.AdminToken = strings.TrimSpace(string(b))
	return &c
}

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
