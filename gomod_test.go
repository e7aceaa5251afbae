package shotd_test

import (
	"os/exec"
	"testing"
)

// TestGoModTidy fails when `go mod tidy` would change go.mod or go.sum: a requirement added by
// hand, one left after its last import went, or a direct one marked indirect. make lint runs the
// same check.
func TestGoModTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("go mod tidy may download modules")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "mod", "tidy", "-diff").CombinedOutput()
	if err != nil {
		t.Fatalf("go mod tidy would change go.mod or go.sum (run go mod tidy): %v\n%s", err, out)
	}
}
