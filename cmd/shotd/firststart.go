package main

import (
	"fmt"
	"io"

	"github.com/shotd/shotd/config"
	shotdsvc "github.com/shotd/shotd/service"
)

// printFirstStart tells the operator about the key made at first start. Its secret goes to out
// only when out is a terminal; never to a pipe or the journal, where it would be kept in the log.
func printFirstStart(out io.Writer, cfg *config.Config, fs *shotdsvc.FirstStart) {
	if isTerminal(out) {
		fmt.Fprintf(out, `
First start: created account "default" (plan default) with one key. Keep the secret key; it is not shown again.
  access key: %s
  secret key: %s
  (also in %s, readable by this user only; delete it once stored)
  admin token: stored in %s
`, fs.AccessKey, fs.SecretKey, fs.CredentialsPath, fs.AdminTokenPath)
		if fs.RequireSignature {
			fmt.Fprintf(out, `The key requires signed requests, as public_url (%s) is not a loopback address: see
"Signed requests" in docs/api.md, and give signed links an expires.

`, cfg.PublicURL)
		} else {
			fmt.Fprintf(out, `Try: curl -o shot.png "%s/api/v1/screenshot?access_key=%s&url=https://example.com"

`, cfg.PublicURL, fs.AccessKey)
		}
		return
	}
	fmt.Fprintf(out, "First start: created account \"default\" with one key; its access and secret keys are in %s\n", fs.CredentialsPath)
	if fs.RequireSignature {
		fmt.Fprintf(out, "The key requires signed requests, as public_url (%s) is not a loopback address.\n", cfg.PublicURL)
	}
}
