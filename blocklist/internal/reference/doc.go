// Package reference is the block list matcher as it was before its rules were stored compactly
// (blocklist as of commit 539e766, element hiding left out), frozen: the oracle that
// blocklist's TestCompactMatchesReference compares the compact matcher with, request by request,
// on the Debian lists. It is not to be changed or used for anything else.
package reference
