package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/objstore"
	"github.com/shotd/shotd/store"
)

// TestFilesAnyNode: a file stored by one node in the shared bucket is found and read through
// another node, for its account only; a file in data_dir is not published.
func TestFilesAnyNode(t *testing.T) {
	nodes := startCluster(t, 3)
	srv := s3test.Start(t, "files")
	remote := func() *store.Store {
		st, err := store.Open(t.TempDir(), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close(context.Background()) })
		st.UseRemote(sharedBucket(t, srv))
		return st
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	a := NewFiles(remote(), nodes[0], log)
	b := NewFiles(remote(), nodes[1], log)
	out := &shotd.Output{Data: []byte("\x89PNG fake"), Format: "png", ContentType: "image/png"}
	rec, err := a.PutFile("acc_1", out, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.File("acc_1", rec.FileID)
	if err != nil {
		t.Fatalf("the other node: %v", err)
	}
	if got.FileID != rec.FileID || got.SizeBytes != rec.SizeBytes || !got.Remote {
		t.Fatalf("record %+v, stored %+v", got, rec)
	}
	f, err := b.OpenFile(got)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(f)
	f.Close()
	if string(data) != string(out.Data) {
		t.Fatalf("read %q", data)
	}
	if _, err := b.File("acc_2", rec.FileID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("another account's file: %v, want not found", err)
	}
	if _, err := b.File("acc_1", "f_"+"0123456789abcdef0123"); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("unknown file: %v, want not found", err)
	}

	// A node without the bucket keeps files in data_dir: nothing is published.
	st, err := store.Open(t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	local := NewFiles(st, nodes[2], log)
	lrec, err := local.PutFile("acc_1", out, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.File("acc_1", lrec.FileID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("a data_dir file through another node: %v, want not found", err)
	}
}

// sharedBucket is a client of the test server's bucket "files" under the prefix "shotd/", as
// [storage.s3] makes one, closed at the end.
func sharedBucket(t *testing.T, srv *s3test.Server) *objstore.Client {
	t.Helper()
	var dial net.Dialer
	c, err := objstore.New(objstore.Config{Endpoint: srv.Endpoint(), Region: s3test.Region, Bucket: "files", Prefix: "shotd/",
		Addressing: objstore.AddressingPath, AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey, Attempts: 2,
		Backoff: 50 * time.Millisecond}, dial.DialContext)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
