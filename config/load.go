package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/shotd/shotd"
)

// fileConfig is what the TOML file decodes into: Config with plans as filePlan tables, whose
// pointer fields tell an omitted key (take the embedded default plan's value) from a given one.
type fileConfig struct {
	Config
	Plans map[string]filePlan `toml:"plans"`
}

type filePlan struct {
	MonthlyQuota            *int      `toml:"monthly_quota"`
	RequestsPerMinute       *int      `toml:"requests_per_minute"`
	StatusRequestsPerMinute *int      `toml:"status_requests_per_minute"`
	Concurrency             *int      `toml:"concurrency"`
	QueueLimit              *int      `toml:"queue_limit"`
	FailuresPerMinute       *int      `toml:"failures_per_minute"`
	FailuresPerDay          *int      `toml:"failures_per_day"`
	Features                *[]string `toml:"features"`
}

// Load builds the configuration: Default, then the file at path ("" = none), then env (a list of
// "NAME=value" as from os.Environ), then Validate. Errors name the file, the line where there is
// one, and the key.
func Load(path string, env []string) (*Config, error) {
	var data []byte
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		data = b
	}
	c, err := Parse(data, env)
	if err != nil && path != "" {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, err
}

// Parse is Load for a file already in memory (nil or empty data: defaults only).
func Parse(data []byte, env []string) (*Config, error) {
	c := Default()
	if err := c.decode(data); err != nil {
		return nil, err
	}
	if err := c.applyEnv(env); err != nil {
		return nil, err
	}
	c.credentials = credentialsDir(env)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decode lays the TOML document over c, refusing unknown keys.
func (c *Config) decode(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	// Lists in the file replace the defaults rather than append to them; go-toml reuses the
	// backing array of a non-nil slice, so start them empty.
	fc := fileConfig{Config: *c}
	fc.Config.Network.AllowPrivate = nil
	fc.Config.Webhooks.RetryDelaysSeconds = nil
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return decodeError(err)
	}
	if fc.Config.Network.AllowPrivate == nil {
		fc.Config.Network.AllowPrivate = c.Network.AllowPrivate
	}
	if fc.Config.Webhooks.RetryDelaysSeconds == nil {
		fc.Config.Webhooks.RetryDelaysSeconds = c.Webhooks.RetryDelaysSeconds
	}
	plans := c.Plans
	*c = fc.Config
	c.Plans = plans
	for name, fp := range fc.Plans {
		p := basePlan(name)
		setInt(&p.MonthlyQuota, fp.MonthlyQuota)
		setInt(&p.RequestsPerMinute, fp.RequestsPerMinute)
		setInt(&p.StatusRequestsPerMinute, fp.StatusRequestsPerMinute)
		setInt(&p.Concurrency, fp.Concurrency)
		setInt(&p.QueueLimit, fp.QueueLimit)
		setInt(&p.FailuresPerMinute, fp.FailuresPerMinute)
		setInt(&p.FailuresPerDay, fp.FailuresPerDay)
		if fp.Features != nil {
			// features = [] means no feature: keep it a non-nil empty list.
			p.Features = append([]string{}, *fp.Features...)
		}
		c.Plans[name] = p
	}
	return nil
}

func setInt(dst *int, src *int) {
	if src != nil {
		*dst = *src
	}
}

// decodeError turns go-toml errors into ones that name the line and the key.
func decodeError(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, _ := e.Position()
			errs = append(errs, fmt.Errorf("line %d: %s: unknown key", line, strings.Join(e.Key(), ".")))
		}
		return &Error{Problems: errs}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if m := typeMismatch.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("wrong type: got a TOML %s, want %s", m[1], goTypeName(m[2]))
		}
		if k := de.Key(); len(k) > 0 {
			return fmt.Errorf("line %d, column %d: %s: %s", line, col, strings.Join(k, "."), msg)
		}
		return fmt.Errorf("line %d, column %d: %s", line, col, msg)
	}
	return fmt.Errorf("toml: %w", err)
}

// typeMismatch matches go-toml's message, which names Go types an operator does not know.
var typeMismatch = regexp.MustCompile(`^cannot decode TOML (.+?) into .* of type (.+)$`)

func goTypeName(t string) string {
	switch strings.TrimPrefix(t, "*") {
	case "int":
		return "an integer"
	case "string":
		return "a string"
	case "[]int":
		return "an array of integers"
	case "[]string":
		return "an array of strings"
	}
	return t
}

// TOML encodes c as a configuration file that Load reads back to an equal Config.
func (c *Config) TOML() ([]byte, error) {
	fc := fileConfig{Config: *c, Plans: make(map[string]filePlan, len(c.Plans))}
	// A secret read from its file stays in the file: written out beside the file key, it would
	// read back as both given.
	if fc.AdminTokenFile != "" {
		fc.AdminToken = ""
	}
	if fc.Storage.S3.SecretAccessKeyFile != "" {
		fc.Storage.S3.SecretAccessKey = ""
	}
	for name, p := range c.Plans {
		features := p.Features
		if features == nil {
			features = []string{}
		}
		fc.Plans[name] = filePlan{
			MonthlyQuota:            &p.MonthlyQuota,
			RequestsPerMinute:       &p.RequestsPerMinute,
			StatusRequestsPerMinute: &p.StatusRequestsPerMinute,
			Concurrency:             &p.Concurrency,
			QueueLimit:              &p.QueueLimit,
			FailuresPerMinute:       &p.FailuresPerMinute,
			FailuresPerDay:          &p.FailuresPerDay,
			Features:                &features,
		}
	}
	return toml.Marshal(fc)
}

const envPrefix = "SHOTD_"

// applyEnv lays SHOTD_* variables over c. Later duplicates win, as in a shell.
func (c *Config) applyEnv(env []string) error {
	var errs []error
	top := reflect.ValueOf(c).Elem()
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) {
			continue
		}
		rest := name[len(envPrefix):]
		if plan, ok := strings.CutPrefix(rest, "PLANS_"); ok {
			if err := c.applyPlanEnv(name, plan, value); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		field, key, section := lookupEnv(top, rest)
		switch {
		case field.IsValid():
			if err := setFromEnv(field, value); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", name, key, err))
			}
		case section != "":
			errs = append(errs, fmt.Errorf("%s: no key %q in [%s]", name, strings.ToLower(rest[len(section)+1:]), section))
		}
	}
	if len(errs) > 0 {
		return &Error{Problems: errs}
	}
	return nil
}

// lookupEnv finds the field that SHOTD_<rest> names. When rest starts with a section prefix but
// names no key of it, section is that section's name (an error); when it names nothing at all,
// everything is zero (a variable of some other tool).
func lookupEnv(top reflect.Value, rest string) (field reflect.Value, key, section string) {
	t := top.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := tomlName(f)
		if tag == "" {
			continue
		}
		up := strings.ToUpper(tag)
		if f.Type.Kind() != reflect.Struct {
			if rest == up {
				return top.Field(i), tag, ""
			}
			continue
		}
		sub, ok := strings.CutPrefix(rest, up+"_")
		if !ok {
			continue
		}
		st := f.Type
		for j := range st.NumField() {
			sf := st.Field(j)
			if stag := tomlName(sf); stag != "" && strings.ToUpper(stag) == sub {
				return top.Field(i).Field(j), tag + "." + stag, ""
			}
			// A table inside a table ([storage.s3]): SHOTD_STORAGE_S3_<KEY>.
			if stag := tomlName(sf); stag != "" && sf.Type.Kind() == reflect.Struct {
				if key, ok := strings.CutPrefix(sub, strings.ToUpper(stag)+"_"); ok {
					for k := range sf.Type.NumField() {
						if ktag := tomlName(sf.Type.Field(k)); ktag != "" && strings.ToUpper(ktag) == key {
							return top.Field(i).Field(j).Field(k), tag + "." + stag + "." + ktag, ""
						}
					}
					// Same length as STORAGE_S3_, so the caller cuts the key name right.
					return reflect.Value{}, "", tag + "." + stag
				}
			}
		}
		section = tag
	}
	return reflect.Value{}, "", section
}

func tomlName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

// setFromEnv parses value into field: ints, strings, and comma-separated lists of them.
func setFromEnv(field reflect.Value, value string) error {
	switch field.Kind() {
	case reflect.String:
		field.SetString(value)
	case reflect.Int:
		n, err := parseInt(value)
		if err != nil {
			return err
		}
		field.SetInt(int64(n))
	case reflect.Slice:
		items := splitList(value)
		out := reflect.MakeSlice(field.Type(), len(items), len(items))
		for i, it := range items {
			if err := setFromEnv(out.Index(i), it); err != nil {
				return fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		field.Set(out)
	default:
		return fmt.Errorf("cannot be set from the environment") // a new field type: teach setFromEnv
	}
	return nil
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	return n, nil
}

// splitList reads "a, b,c"; the empty string is the empty list.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return []string{}
	}
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// planEnvKeys maps the upper-case env suffix of a plan key to its setter. Longest first, so
// STATUS_REQUESTS_PER_MINUTE is not read as plan "x_status" + REQUESTS_PER_MINUTE.
var planEnvKeys = []struct {
	suffix, key string
	set         func(p *shotd.Plan, v string) error
}{
	{"STATUS_REQUESTS_PER_MINUTE", "status_requests_per_minute", intSetter(func(p *shotd.Plan) *int { return &p.StatusRequestsPerMinute })},
	{"REQUESTS_PER_MINUTE", "requests_per_minute", intSetter(func(p *shotd.Plan) *int { return &p.RequestsPerMinute })},
	{"FAILURES_PER_MINUTE", "failures_per_minute", intSetter(func(p *shotd.Plan) *int { return &p.FailuresPerMinute })},
	{"FAILURES_PER_DAY", "failures_per_day", intSetter(func(p *shotd.Plan) *int { return &p.FailuresPerDay })},
	{"MONTHLY_QUOTA", "monthly_quota", intSetter(func(p *shotd.Plan) *int { return &p.MonthlyQuota })},
	{"QUEUE_LIMIT", "queue_limit", intSetter(func(p *shotd.Plan) *int { return &p.QueueLimit })},
	{"CONCURRENCY", "concurrency", intSetter(func(p *shotd.Plan) *int { return &p.Concurrency })},
	{"FEATURES", "features", func(p *shotd.Plan, v string) error { p.Features = splitList(v); return nil }},
}

func intSetter(field func(*shotd.Plan) *int) func(*shotd.Plan, string) error {
	return func(p *shotd.Plan, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		*field(p) = n
		return nil
	}
}

// applyPlanEnv handles SHOTD_PLANS_<NAME>_<KEY>. NAME is matched case-insensitively against the
// plans so far; an unknown one adds a lower-case plan on the embedded default values.
func (c *Config) applyPlanEnv(envName, rest, value string) error {
	for _, k := range planEnvKeys {
		upName, ok := strings.CutSuffix(rest, "_"+k.suffix)
		if !ok || upName == "" {
			continue
		}
		name := strings.ToLower(upName)
		for existing := range c.Plans {
			if strings.EqualFold(existing, upName) {
				name = existing
			}
		}
		p, ok := c.Plans[name]
		if !ok {
			p = basePlan(name)
		}
		p.Features = slices.Clone(p.Features)
		if err := k.set(&p, value); err != nil {
			return fmt.Errorf("%s: plans.%s.%s: %w", envName, name, k.key, err)
		}
		c.Plans[name] = p
		return nil
	}
	return fmt.Errorf("%s: no plan key in the name (want SHOTD_PLANS_<NAME>_<KEY>)", envName)
}

// UnknownEnv lists the SHOTD_* variables of env that name no key: Load leaves them alone (a
// tool may share the prefix), and serve warns of each, since a misspelt top-level name
// (SHOTD_DATADIR) would otherwise be ignored without a word.
func UnknownEnv(env []string) []string {
	var out []string
	top := reflect.ValueOf(&Config{}).Elem()
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) {
			continue
		}
		rest := name[len(envPrefix):]
		if strings.HasPrefix(rest, "PLANS_") {
			continue
		}
		if field, _, section := lookupEnv(top, rest); !field.IsValid() && section == "" {
			out = append(out, name)
		}
	}
	return out
}
