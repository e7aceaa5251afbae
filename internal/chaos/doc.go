// Package chaos drives the real service from outside, as an operator's host would see it: it
// builds and runs `shotd serve` on loopback with its own config and data dir, renders with
// concurrent clients, injects faults (SIGKILL and SIGSTOP of the Chrome processes the service
// started, SIGKILL of the service) and checks every answer, the billing, the jobs and the
// webhooks. It also runs the soak: many renders while the service's resources are sampled.
// ChaosTool and SoakTool are the bodies of the commands tools/chaos and tools/soak.
//
// It signals only processes descended from the service it started, found through /proc.
package chaos
