// Command soak renders many times at full concurrency against a real shotd on loopback, samples
// its resources every interval and fails when one grows without bound (internal/chaos.Soak).
// `make soak` runs it; its flags are those of chaos.SoakTool (-n, -clients, -interval, -bin,
// -limit).
package main
