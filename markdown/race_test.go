//go:build race

package markdown

// raceDetector: the race detector slows chroma's lexers about tenfold, past ConvertTimeout for
// sources that a normal build converts in a second.
const raceDetector = true
