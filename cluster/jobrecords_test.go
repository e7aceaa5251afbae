package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// memRecord is one record kept as JSON with its revision, as the jobs bucket keeps it; after
// each write whose answer is lost, between runs once (another node's write).
type memRecord struct {
	raw     []byte
	rev     uint64
	lose    int    // answers still to lose
	between func() // run once after a lost answer
}

func (m *memRecord) read(context.Context) (jobRecord, uint64, []byte, error) {
	var r jobRecord
	err := json.Unmarshal(m.raw, &r)
	return r, m.rev, m.raw, err
}

func (m *memRecord) write(_ context.Context, r *jobRecord, rev uint64) ([]byte, error) {
	if rev != m.rev {
		return nil, errors.New("wrong last sequence")
	}
	data, err := r.encode()
	if err != nil {
		return nil, err
	}
	m.raw, m.rev = data, m.rev+1
	if m.lose > 0 {
		m.lose--
		if f := m.between; f != nil {
			m.between = nil
			f()
		}
		return data, errNoAnswer
	}
	return nil, nil
}

func (m *memRecord) update(t *testing.T, fn func(*jobRecord) error) jobRecord {
	t.Helper()
	r, err := casRecord(context.Background(), m.read, m.write, fn, func(int, error) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newMemRecord(t *testing.T) *memRecord {
	data, err := (&jobRecord{}).encode()
	if err != nil {
		t.Fatal(err)
	}
	return &memRecord{raw: data, rev: 1}
}

// TestCasRecordAnswerLostThenOtherWrite: a change lands with its answer lost and another write
// comes before it reads the record again; it is not applied twice (the webhook's attempt was
// counted twice so: the record read back differed from the one written).
func TestCasRecordAnswerLostThenOtherWrite(t *testing.T) {
	m := newMemRecord(t)
	m.lose = 1
	m.between = func() { m.update(t, func(r *jobRecord) error { r.HookQueued = true; return nil }) }
	r := m.update(t, func(r *jobRecord) error { r.Starts++; return nil })
	if r.Starts != 1 || !r.HookQueued {
		t.Fatalf("starts %d, hook queued %v; want 1 and true", r.Starts, r.HookQueued)
	}
	if got, _, _, _ := m.read(context.Background()); got.Starts != 1 {
		t.Fatalf("record's starts %d, want 1", got.Starts)
	}
}

// TestCasRecordAnswerLostNotLanded: a write that failed without landing is made again.
func TestCasRecordAnswerLostNotLanded(t *testing.T) {
	m := newMemRecord(t)
	failed := false
	write := m.write
	r, err := casRecord(context.Background(), m.read, func(ctx context.Context, r *jobRecord, rev uint64) ([]byte, error) {
		if !failed {
			failed = true
			data, _ := r.encode()
			return data, errNoAnswer
		}
		return write(ctx, r, rev)
	}, func(r *jobRecord) error { r.Starts++; return nil }, func(int, error) error { return nil })
	if err != nil || r.Starts != 1 {
		t.Fatalf("starts %d (%v), want 1", r.Starts, err)
	}
	if got, _, _, _ := m.read(context.Background()); got.Starts != 1 {
		t.Fatalf("record's starts %d, want 1", got.Starts)
	}
}

// TestCasRecordAnswerLostLandsLate: a change's write loses its answer and lands only after the
// next try has read the record and written over the same revision, which meets a conflict; the
// try after that finds the change landed and does not apply it again.
func TestCasRecordAnswerLostLandsLate(t *testing.T) {
	m := newMemRecord(t)
	var late func() // the first write, landing late
	tries := 0
	write := func(ctx context.Context, r *jobRecord, rev uint64) ([]byte, error) {
		tries++
		switch tries {
		case 1:
			data, err := r.encode()
			if err != nil {
				return nil, err
			}
			late = func() { m.raw, m.rev = data, m.rev+1 }
			return data, errNoAnswer
		case 2:
			late() // lands now, before this try's write, which conflicts
		}
		return m.write(ctx, r, rev)
	}
	r, err := casRecord(context.Background(), m.read, write, func(r *jobRecord) error { r.Starts++; return nil },
		func(int, error) error { return nil })
	if err != nil || r.Starts != 1 {
		t.Fatalf("starts %d (%v), want 1", r.Starts, err)
	}
	if got, _, _, _ := m.read(context.Background()); got.Starts != 1 || tries != 2 {
		t.Fatalf("record's starts %d after %d writes, want 1 after 2", got.Starts, tries)
	}
}

// TestChangesKeepTheLast: a record names its last keptChanges changes, no more.
func TestChangesKeepTheLast(t *testing.T) {
	m := newMemRecord(t)
	for i := 0; i < 3*keptChanges; i++ {
		m.update(t, func(r *jobRecord) error { r.Starts++; return nil })
	}
	r, _, _, _ := m.read(context.Background())
	if len(r.ChangeIDs) != keptChanges || r.Starts != 3*keptChanges {
		t.Fatalf("%d ids after %d writes; want %d", len(r.ChangeIDs), r.Starts, keptChanges)
	}
}
