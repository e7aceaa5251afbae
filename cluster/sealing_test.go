package cluster

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/objstore"
)

// TestSealedJobRenderedOnAnotherNode: an async store=true job queued on one node is rendered on
// another, which opens its sealed credentials with the cluster's key and uploads to the bucket;
// the record in the replicated bucket never holds them in clear.
func TestSealedJobRenderedOnAnotherNode(t *testing.T) {
	srv := s3test.Start(t, "shots")
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sealers := make([]*objstore.Sealer, 2)
	for i := range sealers {
		s, err := OpenSealer(ctx, nodes[i])
		if err != nil {
			t.Fatal(err)
		}
		sealers[i] = s
	}
	up := &objstore.Uploader{Dial: (&net.Dialer{}).DialContext, Attempts: 2, Backoff: 50 * time.Millisecond, Log: zerolog.Nop()}
	page := []byte("\x89PNG sealed job")
	render := up.Wrap(shotd.RenderFunc(func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return &shotd.Output{Data: page, Format: "png", ContentType: "image/png", Width: 1, Height: 1}, nil
	}))
	queuing := startJobsNode(t, nodes[0], nil, nil, func(c *JobsConfig) { c.Capacity, c.Secrets = -1, sealers[0] })
	rendering := startJobsNode(t, nodes[1], render.Render, nil, func(c *JobsConfig) { c.Secrets = sealers[1] })

	acc := shotd.Account{ID: "acc_sealed", CreatedAt: time.Now()}
	req := jobRequest(acc, shotd.Plan{MonthlyQuota: 5,
		PlanLimits: shotd.PlanLimits{Concurrency: 1}}, 1, false)
	req.Options[0].Store = true
	req.Options[0].Storage = shotd.StorageTarget{Bucket: "shots", Endpoint: srv.Endpoint(), Path: "sealed/job",
		Credentials: shotd.StorageCredentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}}
	jobs, _, err := queuing.jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e, err := nodes[2].Jobs.Get(ctx, "j."+jobs[0].JobID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(e.Value(), []byte(s3test.SecretKey)) || bytes.Contains(e.Value(), []byte(s3test.AccessKey)) {
		t.Fatal("the job record holds the storage credentials in clear")
	}
	job := waitJob(t, rendering.jobs, acc.ID, jobs[0].JobID, 30*time.Second)
	if job.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s %s, want succeeded", job.Status, job.ErrorCode, job.ErrorMessage)
	}
	got, err := os.ReadFile(filepath.Join(srv.Root, "shots", "sealed", "job.png"))
	if err != nil || !bytes.Equal(got, page) {
		t.Fatalf("uploaded object: %q %v", got, err)
	}
}

// TestOpenSealerOneKey: nodes asking for the key at once all get the same one, and a node's
// sealed credentials open on another.
func TestOpenSealerOneKey(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sealers := make([]*objstore.Sealer, len(nodes))
	errs := make(chan error, len(nodes))
	for i := range nodes {
		go func() {
			var err error
			sealers[i], err = OpenSealer(ctx, nodes[i])
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sealers {
		b, err := s.Seal(shotd.StorageCredentials{AccessKeyID: "id", SecretAccessKey: "secret"})
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range sealers {
			c, err := o.Open(b)
			if err != nil || c.SecretAccessKey.Reveal() != "secret" {
				t.Fatalf("node %d's sealed credentials on node %d: %v", i+1, k+1, err)
			}
		}
	}
	if _, err := sealers[0].Open([]byte(strings.Repeat("x", 40))); err == nil {
		t.Fatal("altered credentials opened")
	}
}
