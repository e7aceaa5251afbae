package httpd

import (
	"testing"

	"github.com/shotd/shotd"
)

// TestStorageKey: the key is read back from a location in either addressing
// (objstore.Client.Location), escaped segments decoded, a key that starts with the bucket's
// name kept whole where the bucket is in the host.
func TestStorageKey(t *testing.T) {
	st := shotd.StorageTarget{Bucket: "user"}
	for loc, want := range map[string]string{
		"http://127.0.0.1:9000/user/shots/a%20b.png":   "shots/a b.png",
		"https://user.s3.example.com/shots/a.png":      "shots/a.png",
		"https://user.s3.example.com/user/shots/a.png": "user/shots/a.png",
		"://bad": "",
	} {
		if got := storageKey(loc, st); got != want {
			t.Errorf("storageKey(%q) = %q, want %q", loc, got, want)
		}
	}
}
