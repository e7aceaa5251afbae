package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// Version is set at build time with -ldflags "-X main.Version=..." (make build does); when it
// is not, version() reads the module version or VCS revision that go build recorded.
var Version = "dev"

// version is Version, or what the Go toolchain recorded in the binary: the module version of a
// `go install ...@v1.2.3`, else the commit of the checkout it was built in.
func version() string {
	if Version != "dev" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	return buildVersion(bi)
}

// buildVersion reads the version out of the build info.
func buildVersion(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return Version
	}
	return "dev-" + rev[:min(12, len(rev))] + dirty
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(NewMain().Run(ctx, os.Args[1:]))
}

// Main runs one command of the binary.
type Main struct {
	Stdout io.Writer
	Stderr io.Writer
	Env    []string
}

// NewMain returns a Main on the process's standard streams and environment.
func NewMain() *Main {
	return &Main{Stdout: os.Stdout, Stderr: os.Stderr, Env: os.Environ()}
}

const usage = `usage: shotd <command> [flags]

commands:
  serve [--config FILE]   run the service (embedded defaults without --config); SIGHUP reloads plans
  admin <subcommand>      manage accounts, keys and backups through the admin API (shotd admin help)
  cluster status [--config FILE]  print the members, the meta leader and the buckets (cluster mode)
  config print [--config FILE]   print the configuration serve would run with
  config check FILE       check a configuration file and what it points at (browser, ffmpeg, lists)
  openapi [--config FILE] print the OpenAPI 3.1 document of the public API (also at /openapi.json)
  version                 print the version
Every command answers --help.
`

// Run executes args and returns the process exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = m.serve(ctx, args[1:])
	case "admin":
		err = m.admin(ctx, args[1:])
	case "cluster":
		err = m.clusterCmd(ctx, args[1:])
	case "config":
		err = m.config(ctx, args[1:])
	case "openapi":
		err = m.openapi(args[1:])
	case "version", "--version", "-v":
		fmt.Fprintf(m.Stdout, "shotd %s\n", version())
	case "help", "--help", "-h":
		fmt.Fprint(m.Stdout, usage)
	default:
		fmt.Fprintf(m.Stderr, "shotd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0 // the usage is printed
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "shotd: %v\n", err)
		return 1
	}
	return 0
}
