package service

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/shotd/shotd/blocklist"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/media"
)

// Programs are what the service needs outside the config file, found by Preflight.
type Programs struct {
	Browser        string // absolute path
	BrowserVersion string // "Chromium 156.0.8078.79"; "" when the binary did not say
	FFmpeg         string
	FFmpegVersion  string
}

// Preflight checks what the service needs outside the config file: the browser, ffmpeg and,
// withLists, the filter lists. Open runs it before it opens anything (and loads the lists
// itself, to parse them once); `shotd config check` runs it alone. It reports every failure,
// each naming its config key.
func Preflight(ctx context.Context, cfg *config.Config, withLists bool) (Programs, error) {
	var p Programs
	var errs []error
	var err error
	if p.Browser, err = cdpclient.FindBrowser(cfg.Browser.Path); err != nil {
		errs = append(errs, fmt.Errorf("browser.path: %w", err))
	} else {
		p.BrowserVersion = browserVersion(ctx, p.Browser)
	}
	if p.FFmpeg, p.FFmpegVersion, err = media.FindFFmpeg(ctx, cfg.Media.FFmpegPath); err != nil {
		errs = append(errs, fmt.Errorf("media.ffmpeg_path: %w (scripts/install-deps.sh installs ffmpeg)", err))
	}
	for key, path := range map[string]string{"blocking.easylist": cfg.Blocking.EasyList, "blocking.easyprivacy": cfg.Blocking.EasyPrivacy} {
		if !withLists {
			break
		}
		if _, err := blocklist.LoadFiles(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (scripts/install-deps.sh installs webext-ublock-origin-chromium)", key, err))
		}
	}
	return p, errors.Join(errs...)
}

// browserVersion asks the binary for its version with --version, outside cdpclient, which owns
// the running processes. (In cdpclient it would be Browser.getVersion on the DevTools connection
// each process opens anyway, which also covers a browser.path wrapper that prints nothing.)
func browserVersion(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}
