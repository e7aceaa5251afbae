package actors_test

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
)

// noSeal leaves credentials as they are: sealing is tested elsewhere.
type noSeal struct{}

func (noSeal) SealOptions(o *shotd.Options) (*shotd.Options, error) { return o, nil }
func (noSeal) OpenOptions(*shotd.Options) error                     { return nil }

// recordOptions is what NewJobRecords stores of o.
func recordOptions(t *testing.T, o *shotd.Options) json.RawMessage {
	t.Helper()
	jobs, _, err := actors.NewJobRecords(shotd.JobRequest{Account: shotd.Account{ID: "acc_a"}, Options: []*shotd.Options{o}}, noSeal{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return jobs[0].Options
}

// TestJobRecordOptionsCompact: a job record leaves the zero fields of its options out (a tenth of
// the size: an async accept's commit costs what it writes), and they read back as in full.
func TestJobRecordOptionsCompact(t *testing.T) {
	o := &shotd.Options{URL: "https://example.com/", Format: shotd.FormatPNG, Async: true, Given: []string{"url", "async"}}
	raw := recordOptions(t, o)
	if strings.Contains(string(raw), `"HTML"`) || len(raw) > 200 {
		t.Errorf("stored options %s (%d bytes): want the zero fields left out", raw, len(raw))
	}
	r := rand.New(rand.NewSource(1))
	for i := range 300 {
		v, ok := quick.Value(reflect.TypeFor[shotd.Options](), r)
		if !ok {
			t.Fatal("quick cannot make Options")
		}
		o := v.Addr().Interface().(*shotd.Options)
		for f := range v.NumField() { // some fields zero, as in a real request
			if r.Intn(2) == 0 {
				v.Field(f).SetZero()
			}
		}
		var full, compact shotd.Options
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &full); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(recordOptions(t, o), &compact); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(full, compact) {
			t.Fatalf("options %d read back\n%+v\nfrom the record, and\n%+v\nfrom their full JSON", i, compact, full)
		}
	}
}
