package actors_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/objstore"
)

// closedFiles is the store with every file it opens closed at once: reading it fails, as a
// disk error would.
type closedFiles struct{ actors.JobFiles }

func (c closedFiles) OpenFile(rec shotd.FileRecord) (*os.File, error) {
	f, err := c.JobFiles.OpenFile(rec)
	if err == nil {
		f.Close()
	}
	return f, err
}

// TestJobStoredHitUnreadable: a store=true job whose cached file cannot be read is rendered
// instead: the service's own trouble, never a failure counted against the account.
func TestJobStoredHitUnreadable(t *testing.T) {
	st := storetest.Open(t, "")
	acc, _ := newJobAccount(t, st)
	o := jobOptions(t, `{"url":"https://example.test/","cache":true,"store":true,"storage_bucket":"user",
		"storage_endpoint":"http://127.0.0.1:9","storage_access_key_id":"k","storage_secret_access_key":"s"}`)
	s := &script{}
	out, _ := s.render(context.Background(), o)
	if _, err := st.PutCachedFile(acc.ID, out, time.Hour, o.ResponseCacheKey(acc.ID), o.CacheTTL); err != nil {
		t.Fatal(err)
	}
	up := &objstore.Uploader{Attempts: 1, Dial: func(context.Context, string, string) (net.Conn, error) {
		t.Error("an unreadable file was uploaded")
		return nil, errors.New("no upload in this test")
	}}
	r := actors.JobRenderer{Files: closedFiles{st}, Render: shotd.RenderFunc(s.render), Uploader: up, FileTTL: time.Hour,
		RenderGrace: time.Second, BusyRetry: time.Second}
	res, outcome, err := r.Run(context.Background(), o, acc.ID)
	if err != nil || outcome != shotd.OutcomeSucceeded || res.Cache != "MISS" || s.count() != 2 {
		t.Fatalf("%v outcome %v %+v, %d renders: want a fresh render, succeeded", err, outcome, res, s.count()-1)
	}
}
