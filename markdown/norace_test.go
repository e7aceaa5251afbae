//go:build !race

package markdown

const raceDetector = false
