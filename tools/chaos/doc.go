// Command chaos runs the chaos scenario of internal/chaos against a real shotd on loopback and
// prints its figures; it exits 1 when a correctness rule broke. `make chaos` runs it; its flags
// are those of chaos.ChaosTool (-clients, -settle, -stop, -bin, -limit).
package main
