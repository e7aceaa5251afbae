package httpd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/store"
)

// slowReader hands out at most 128 KiB a read, 50 ms apart: a client on a slow link.
type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) {
	time.Sleep(50 * time.Millisecond)
	return s.r.Read(p[:min(len(p), 128<<10)])
}

// TestAdminBackupSlowClient: a backup that takes longer to send than its stall bound arrives
// whole: the bound runs from the last progress, not from the answer's start (where the admin
// listener's 30 s cut every backup longer than that).
func TestAdminBackupSlowClient(t *testing.T) {
	st := storetest.Open(t, "")
	acc, err := st.CreateAccount("big@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	// About 9 MB of database: more than the socket buffers take at once.
	opts, _ := json.Marshal(map[string]string{"html": strings.Repeat("x", 30<<10)})
	jobs := make([]shotd.Job, 300)
	for i := range jobs {
		jobs[i] = shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: "k", Options: opts}
	}
	if err := st.CreateJobs(jobs, nil); err != nil {
		t.Fatal(err)
	}
	defer httpd.SetAdminTimeouts(1500*time.Millisecond, 1500*time.Millisecond)() // the transfer takes about 4 s
	adm := httpd.NewAdmin("tok-0123456789abcdef", "http://127.0.0.1", st, config.Default().Plans, nil, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go adm.Serve(ln)
	defer adm.Shutdown(context.Background())
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /admin/v1/backup HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-0123456789abcdef\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReaderSize(slowReader{c}, 128<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || err != nil || n != resp.ContentLength || n < 8<<20 {
		t.Fatalf("backup: status %d, %d of %d bytes, %v", resp.StatusCode, n, resp.ContentLength, err)
	}
}
