// Package s1render wraps the render pipeline with ScreenshotOne's rules that a render's result
// decides: a selector, click or hover that matches nothing is skipped rather than failing
// (error_on_*_not_found=false), and an HTTP error status of the page's document fails the
// render with host_returned_error (ignore_host_errors=false).
package s1render
