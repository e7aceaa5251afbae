// Command shotd is the screenshot service: `shotd serve` runs it, `shotd admin` is a client of its
// admin API, `shotd version` prints the build.
package main
