package blocklist

import (
	"os"
	"strings"
	"testing"
)

// TestCompactMatchesReference: the compact rules match exactly what the matcher did before them
// (reference_test.go, frozen), rule for rule: for requests made from every network rule of
// the Debian lists, each in two resource types and on two pages, both say the same, block or
// not, and name the same rule.
func TestCompactMatchesReference(t *testing.T) {
	haveDebianLists(t)
	var lines []string
	for _, path := range []string{easyList, easyPrivacy} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	_, _, both := realLists(t)
	old, err := refLoadFiles(easyList, easyPrivacy)
	if err != nil {
		t.Fatal(err)
	}
	reqs := corpus(lines)
	if raceEnabled || testing.Short() {
		var some []Request // one in 20, from the whole lists
		for i := 0; i < len(reqs); i += 20 {
			some = append(some, reqs[i])
		}
		reqs = some
	}
	blocked, excepted, differ := 0, 0, 0
	for _, req := range reqs {
		got, gotRule := both.MatchRule(req)
		want, wantRule := old.MatchRule(refRequest(req))
		switch {
		case got != want || gotRule != wantRule:
			if differ++; differ <= 20 {
				t.Errorf("%+v: compact %v (%q), reference %v (%q)", req, got, gotRule, want, wantRule)
			}
		case got:
			blocked++
		case gotRule != "":
			excepted++
		}
	}
	t.Logf("%d requests from %d lines: %d blocked, %d excepted, %d differ", len(reqs), len(lines), blocked, excepted, differ)
	if blocked < len(reqs)/4 || blocked > len(reqs)*9/10 || excepted*5000 < len(reqs) {
		t.Fatalf("the corpus blocks %d and excepts %d of %d requests: it no longer reaches the rules", blocked, excepted, len(reqs))
	}
}

// corpus makes requests from the network rules in lines: a URL each rule's pattern matches
// (`^` as `/`, `*` as a few letters), some with upper-case letters, and a near miss of it,
// loaded as two resource types (in turn from the whole list) from a third-party page and from a
// page on a domain the rule names or on the URL's own host; plus the benchmark's requests.
func corpus(lines []string) []Request {
	types := []string{"script", "image", "xhr", "stylesheet", "document", "subdocument", "font", "media", "ping", "websocket", "other"}
	reqs := append([]Request(nil), benchRequests...)
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '!' || line[0] == '[' || strings.Contains(line, "#") {
			continue
		}
		body, opts := splitOptions(strings.TrimPrefix(line, "@@"))
		if len(body) > 1 && body[0] == '/' && body[len(body)-1] == '/' {
			continue // regex rules: reached by the URLs of the others and the benchmark's
		}
		var u string
		switch {
		case strings.HasPrefix(body, "||"):
			u = "https://" + body[2:]
		case strings.HasPrefix(body, "|http"):
			u = body[1:]
		case strings.HasPrefix(body, "|"):
			u = "https://cdn.example.net/" + body[1:]
		default:
			u = "https://cdn.example.net/p/" + body
		}
		u = strings.NewReplacer("^", "/", "*", "xyz", "|", "").Replace(u)
		if i%7 == 0 {
			u = strings.ToUpper(u[:len(u)/2]) + u[len(u)/2:]
		}
		page := "https://www.news.example/article"
		if _, v, ok := strings.Cut(opts, "domain="); ok {
			d, _, _ := strings.Cut(v, ",")
			d, _, _ = strings.Cut(d, "|")
			d = strings.TrimPrefix(strings.ReplaceAll(d, "*", "com"), "~")
			page = "https://" + d + "/"
		} else if i%3 == 0 {
			page = u
		}
		// A near miss too: another host label, or the URL cut short.
		miss := strings.Replace(u, "://", "://x", 1)
		if i%2 == 0 {
			miss = u[:len(u)*2/3]
		}
		for k := range 2 {
			typ := types[(i+k*5)%len(types)]
			reqs = append(reqs, Request{URL: u, PageURL: "https://www.news.example/article", ResourceType: typ},
				Request{URL: u, PageURL: page, ResourceType: typ},
				Request{URL: miss, PageURL: page, ResourceType: typ})
		}
	}
	return reqs
}

// BenchmarkMatchReference is BenchmarkMatch on the matcher as it was before the compact rules.
func BenchmarkMatchReference(b *testing.B) {
	haveDebianLists(b)
	old, err := refLoadFiles(easyList, easyPrivacy)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		old.Match(refRequest(benchRequests[i%len(benchRequests)]))
	}
}
