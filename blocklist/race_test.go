//go:build race

package blocklist

const raceEnabled = true
