package sign_test

import (
	"net/url"
	"testing"

	"github.com/shotd/shotd/sign"
)

// The links below were made by ScreenshotOne's Node SDK (npm screenshotone-api-sdk 1.1.22,
// generateSignedTakeURL and generateSignedAnimateURL) with access key AK_test and secret
// SK_secret_0123: their signing, byte for byte, with a space as +, UTF-8 and a comma list.
func TestScreenshotOneSignature(t *testing.T) {
	const secret = "SK_secret_0123"
	cases := []struct {
		name string
		link string
		ok   bool
	}{
		{"take", "http://127.0.0.1:1/api/v1/take?url=https%3A%2F%2Fexample.com%2Fa+b%3Fx%3D1%26y%3D%C3%A9&delay=3&block_ads=true&hide_selectors=.a%2C%23b+c&viewport_width=300&access_key=AK_test&signature=07afd05b5efcee23c41b5e9c45ce42be0b19360222f5d7c7988c4a51a3919a08", true},
		{"animate", "http://127.0.0.1:1/api/v1/animate?url=https%3A%2F%2Fexample.com&format=mp4&duration=2&scenario=scroll&access_key=AK_test&signature=af685d34a4ed9ef63b89a67cea0105150c727d7133c0c9f09af67d6e9e7ea5d2", true},
		{"signature first", "http://x/?signature=af685d34a4ed9ef63b89a67cea0105150c727d7133c0c9f09af67d6e9e7ea5d2&url=https%3A%2F%2Fexample.com&format=mp4&duration=2&scenario=scroll&access_key=AK_test", true},
		{"upper-case hex", "http://x/?url=https%3A%2F%2Fexample.com&format=mp4&duration=2&scenario=scroll&access_key=AK_test&signature=AF685D34A4ED9EF63B89A67CEA0105150C727D7133C0C9F09AF67D6E9E7EA5D2", true},
		// The bytes as sent are signed: the same options encoded otherwise do not match.
		{"space as %20", "http://x/?url=https%3A%2F%2Fexample.com%2Fa%20b%3Fx%3D1%26y%3D%C3%A9&delay=3&block_ads=true&hide_selectors=.a%2C%23b+c&viewport_width=300&access_key=AK_test&signature=07afd05b5efcee23c41b5e9c45ce42be0b19360222f5d7c7988c4a51a3919a08", false},
		{"reordered", "http://x/?format=mp4&url=https%3A%2F%2Fexample.com&duration=2&scenario=scroll&access_key=AK_test&signature=af685d34a4ed9ef63b89a67cea0105150c727d7133c0c9f09af67d6e9e7ea5d2", false},
		{"edited", "http://x/?url=https%3A%2F%2Fexample.com&format=mp4&duration=3&scenario=scroll&access_key=AK_test&signature=af685d34a4ed9ef63b89a67cea0105150c727d7133c0c9f09af67d6e9e7ea5d2", false},
		{"added", "http://x/?url=https%3A%2F%2Fexample.com&format=mp4&duration=2&scenario=scroll&access_key=AK_test&signature=af685d34a4ed9ef63b89a67cea0105150c727d7133c0c9f09af67d6e9e7ea5d2&delay=1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := url.Parse(c.link)
			if err != nil {
				t.Fatal(err)
			}
			sig := u.Query().Get("signature")
			if got := sign.VerifyQueryS1(secret, u.RawQuery, sig); got != c.ok {
				t.Fatalf("verify = %v, want %v (signed text %q)", got, c.ok, sign.UnsignedQuery(u.RawQuery))
			}
		})
	}
}
