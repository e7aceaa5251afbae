package option

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/urlhost"
)

// StorageACLs are the canned ACLs of S3 that storage_acl accepts.
var StorageACLs = []string{"private", "public-read", "public-read-write", "authenticated-read",
	"aws-exec-read", "bucket-owner-read", "bucket-owner-full-control"}

// StoragePlaceholders are the {{name}} placeholders of storage_path, after ScreenshotOne's: the
// time of the upload (UTC), a random id, the SHA-256 of the file and its extension.
var StoragePlaceholders = []string{"year", "month", "day", "hour", "minute", "second", "millisecond",
	"timestamp", "uuid", "hash", "extension", "format"}

// StorageOptions are the options that only mean something with store=true.
var StorageOptions = []string{"storage_bucket", "storage_path", "storage_endpoint", "storage_access_key_id",
	"storage_secret_access_key", "storage_acl", "storage_class", "storage_return_location"}

var placeholderRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// ExpandStoragePath fills the placeholders of tmpl with values (by name, see
// StoragePlaceholders); a name without a value is left as it is.
func ExpandStoragePath(tmpl string, values map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := placeholderRE.FindStringSubmatch(m)[1]
		if v, ok := values[name]; ok {
			return v
		}
		return m
	})
}

// checkStoragePath refuses unknown placeholders and keys S3 would refuse or store oddly. A value
// is never quoted back whole: it may be long.
func checkStoragePath(v string) string {
	for _, m := range placeholderRE.FindAllStringSubmatch(v, -1) {
		if !slices.Contains(StoragePlaceholders, m[1]) {
			return fmt.Sprintf("unknown placeholder {{%s}}; known: %s", clip(m[1]), strings.Join(StoragePlaceholders, ", "))
		}
	}
	switch {
	case strings.TrimSpace(v) == "":
		return "must not be empty"
	case len(v) > 900: // S3 keys end at 1024 bytes; leave room for the placeholders' values
		return "must be at most 900 bytes"
	case strings.HasPrefix(v, "/"):
		return "must not start with /"
	case strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "must not contain control characters"
	case slices.Contains(strings.Split(v, "/"), ".."):
		return "must not contain a .. segment"
	}
	return ""
}

// bucketRE is the S3 bucket naming rule (3 to 63 lower-case letters, digits, dots and hyphens).
var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func checkBucket(v string) string {
	if !bucketRE.MatchString(v) {
		return "must be an S3 bucket name: 3 to 63 lower-case letters, digits, dots and hyphens"
	}
	return ""
}

// CheckStorageEndpoint checks an S3 endpoint: http:// or https://, a host, an optional port, and
// nothing else (S3 endpoints take no path).
func CheckStorageEndpoint(v string) string {
	if msg, _ := urlhost.CheckHTTPURL(v); msg != "" {
		return msg
	}
	u, _ := url.Parse(v)
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "must be only a scheme, a host and an optional port, such as https://s3.example.com:9000"
	}
	return ""
}

// checkCredential never quotes the value: it is a secret.
func checkCredential(v string) string {
	if v == "" || len(v) > 256 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "must be 1 to 256 printable characters without spaces"
	}
	return ""
}

var storageClassRE = regexp.MustCompile(`^[A-Za-z_]{1,40}$`)

func checkStorageClass(v string) string {
	if !storageClassRE.MatchString(v) {
		return "must be an S3 storage class such as STANDARD or STANDARD_IA"
	}
	return ""
}

// storageOptionSpecs are the rows of the option table for store=true. Every one is left out of
// the cache key: where a file goes does not change its bytes, and a cache hit uploads the cached
// file where its request says (httpd's admitHit).
func storageOptionSpecs() []*OptionSpec {
	const g = "Storage"
	return []*OptionSpec{
		boolean(g, "store", "false", "Upload the result to an S3-compatible bucket (the storage_* options); a failed upload is storage_failed.",
			func(o *draft, v bool) { o.Store = v }).nonRender(),
		str(g, "storage_bucket", "", "Bucket to upload to; required with store=true.",
			func(o *draft, v string) { o.Storage.Bucket = v }).checked(checkBucket).nonRender(),
		str(g, "storage_path", "{{uuid}}", "Object key, with placeholders {{year}} {{month}} {{day}} {{hour}} {{minute}} {{second}} {{millisecond}} {{timestamp}} {{uuid}} {{hash}} {{extension}} {{format}}; `.` and the extension are added unless the key uses {{extension}} or already ends with it.",
			func(o *draft, v string) { o.Storage.Path = v }).checked(checkStoragePath).nonRender(),
		str(g, "storage_endpoint", "", "S3 endpoint, http(s)://host[:port]; default "+shotd.DefaultStorageEndpoint+". It must be a public address unless network.allow_private lists it.",
			func(o *draft, v string) { o.Storage.Endpoint = v }).checked(CheckStorageEndpoint).nonRender(),
		str(g, "storage_access_key_id", "", "Access key id of the bucket; required with store=true. Never stored in clear, logged or echoed.",
			func(o *draft, v string) { o.Storage.Credentials.AccessKeyID = shotd.Secret(v) }).checked(checkCredential).nonRender(),
		str(g, "storage_secret_access_key", "", "Secret access key of the bucket; required with store=true. Never stored in clear, logged or echoed.",
			func(o *draft, v string) { o.Storage.Credentials.SecretAccessKey = shotd.Secret(v) }).checked(checkCredential).nonRender(),
		enum(g, "storage_acl", "", "Canned ACL of the object (default: the bucket's).", StorageACLs,
			func(o *draft, v string) { o.Storage.ACL = v }).nonRender(),
		str(g, "storage_class", "", "Storage class of the object, such as STANDARD_IA (default: the bucket's).",
			func(o *draft, v string) { o.Storage.Class = strings.ToUpper(v) }).checked(checkStorageClass).nonRender(),
		boolean(g, "storage_return_location", "false", "Add store.location, the object's address, to the JSON result.",
			func(o *draft, v bool) { o.Storage.ReturnLocation = v }).nonRender(),
	}
}

// checkStorageOptions is the cross-check of store=true and the storage_* options.
func checkStorageOptions(o *shotd.Options, given map[string]bool, fail func(string, string, ...any)) {
	if !o.Store {
		for _, n := range StorageOptions {
			if given[n] {
				fail(n, "needs store=true")
			}
		}
		return
	}
	for _, n := range []string{"storage_bucket", "storage_access_key_id", "storage_secret_access_key"} {
		if !given[n] {
			fail(n, "is required with store=true")
		}
	}
}
