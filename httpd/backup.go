package httpd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// backup serves GET /admin/v1/backup: the database as of one read transaction, streamed (never
// held in memory), with its length, so that a cut transfer is seen as one. With ?files=1 it is
// a tar archive of that copy and the stored files (store.BackupArchive), chunked: its length is
// not known before the end, and the archive's last entry tells a whole one.
func (a *Admin) backup(ctx *fasthttp.RequestCtx) {
	if string(ctx.QueryArgs().Peek("files")) == "1" {
		a.backupArchive(ctx)
		return
	}
	pr, pw := io.Pipe()
	sized := make(chan int64, 1)
	errc := make(chan error, 1)
	go func() {
		err := a.store.Backup(pw, func(n int64) error { sized <- n; return nil })
		// A reader that went away (the client hung up) ends the copy with its error.
		pw.CloseWithError(err)
		errc <- err
	}()
	select {
	case n := <-sized:
		ctx.Response.Header.Set("Content-Type", "application/octet-stream")
		ctx.Response.Header.Set("Content-Disposition",
			fmt.Sprintf(`attachment; filename="shotd-%s.db"`, time.Now().UTC().Format("20060102T150405Z")))
		ctx.Response.Header.Set("Cache-Control", "no-store")
		// fasthttp reads pr to its end and closes it; a closed reader stops the copy.
		ctx.SetBodyStream(writeProgress(ctx, pr), int(n))
		a.log.Info().Int64("bytes", n).Msg("backup started")
	case err := <-errc:
		pr.Close()
		if err == nil {
			err = errors.New("backup ended before it began")
		}
		a.fail(ctx, shotd.Wrap(shotd.CodeInternalError, err, "the backup could not be made"))
	}
}

// backupArchive streams store.BackupArchive. An error once the answer has begun cuts the chunked
// body short (no final chunk), which the client sees as a failed transfer.
func (a *Admin) backupArchive(ctx *fasthttp.RequestCtx) {
	pr, pw := io.Pipe()
	go func() {
		err := a.store.BackupArchive(pw)
		if err != nil && !errors.Is(err, io.ErrClosedPipe) { // closed pipe: the client went away
			a.log.Warn().Err(err).Msg("backup with files cut short")
		}
		pw.CloseWithError(err)
	}()
	ctx.Response.Header.Set("Content-Type", "application/x-tar")
	ctx.Response.Header.Set("Content-Disposition",
		fmt.Sprintf(`attachment; filename="shotd-%s.tar"`, time.Now().UTC().Format("20060102T150405Z")))
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetBodyStream(writeProgress(ctx, pr), -1)
	a.log.Info().Msg("backup with files started")
}

// streamStall bounds how long a backup's answer may make no progress: the admin listener's
// write timeout (30 s) is set once for a whole answer, which cut every backup that took longer
// to send. A blocked write resumes once the client has drained a good part of the socket's
// buffers (megabytes), so the bound is wide enough for slow links.
var streamStall = 2 * time.Minute

// writeProgress gives the answer streamed from r a write deadline of streamStall from its last
// read, rather than the server's from the answer's start. fasthttp closes the stream once the
// answer ends or fails, which ends the copy that feeds r.
func writeProgress(ctx *fasthttp.RequestCtx, r io.ReadCloser) io.ReadCloser {
	return &progressDeadline{r: r, conn: ctx.Conn()}
}

type progressDeadline struct {
	r    io.ReadCloser
	conn net.Conn
}

func (p *progressDeadline) Read(b []byte) (int, error) {
	_ = p.conn.SetWriteDeadline(time.Now().Add(streamStall))
	return p.r.Read(b)
}

func (p *progressDeadline) Close() error { return p.r.Close() }
