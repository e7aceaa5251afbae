package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

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
  serve [--config FILE]   run the service (embedded defaults without --config)
  admin <subcommand>      manage accounts and keys through the admin API (shotd admin help)
  version                 print the version
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
	case "version", "--version", "-v":
		fmt.Fprintf(m.Stdout, "shotd %s\n", Version)
	case "help", "--help", "-h":
		fmt.Fprint(m.Stdout, usage)
	default:
		fmt.Fprintf(m.Stderr, "shotd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "shotd: %v\n", err)
		return 1
	}
	return 0
}
