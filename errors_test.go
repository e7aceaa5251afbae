package shotd

import "testing"

func TestCatalogueComplete(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Catalogue {
		if seen[c.Code] || c.Status < 400 || c.Doc == "" {
			t.Fatalf("bad catalogue entry %+v", c)
		}
		seen[c.Code] = true
		if Info(c.Code) != c {
			t.Fatalf("Info(%s) mismatch", c.Code)
		}
	}
	// The 28 of api-v1 and the service's own additions.
	added := []Code{CodePageCrashed, CodeStorageFailed, CodeContentCheckFailed, CodeHostReturnedError}
	for _, c := range added {
		if !seen[c] {
			t.Errorf("catalogue lacks %s", c)
		}
	}
	if want := 28 + len(added); len(seen) != want {
		t.Fatalf("catalogue has %d codes, want the 28 of api-v1 and %d more", len(seen), len(added))
	}
}
