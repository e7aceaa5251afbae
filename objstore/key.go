package objstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// ObjectKey expands a storage_path template for one file (shotd.StoragePlaceholders): the time
// in UTC, a random uuid, the SHA-256 of data, its extension (shotd.Extension) and format. When
// the template does not use {{extension}} and does not already end with it, "." and the
// extension are appended, so that a plain name still opens as its type.
func ObjectKey(tmpl, format string, data []byte, now time.Time) string {
	return objectKey(tmpl, format, sha256.Sum256(data), now)
}

// objectKey is ObjectKey of a file whose SHA-256 is sum.
func objectKey(tmpl, format string, sum [sha256.Size]byte, now time.Time) string {
	now = now.UTC()
	ext := shotd.Extension(format)
	vals := map[string]string{
		"year":        fmt.Sprintf("%04d", now.Year()),
		"month":       fmt.Sprintf("%02d", int(now.Month())),
		"day":         fmt.Sprintf("%02d", now.Day()),
		"hour":        fmt.Sprintf("%02d", now.Hour()),
		"minute":      fmt.Sprintf("%02d", now.Minute()),
		"second":      fmt.Sprintf("%02d", now.Second()),
		"millisecond": fmt.Sprintf("%03d", now.Nanosecond()/int(time.Millisecond)),
		"timestamp":   strconv.FormatInt(now.Unix(), 10),
		"uuid":        newUUID(),
		"hash":        hex.EncodeToString(sum[:]),
		"extension":   ext,
		"format":      format,
	}
	key := option.ExpandStoragePath(tmpl, vals)
	usesExt := option.ExpandStoragePath(tmpl, map[string]string{"extension": ""}) != tmpl
	if !usesExt && !strings.HasSuffix(key, "."+ext) {
		key += "." + ext
	}
	return key
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
