package testenv

import "os"

// Browser is the browser binary the suites launch: SHOTD_TEST_BROWSER, or "" for cdpclient's
// default.
func Browser() string { return os.Getenv("SHOTD_TEST_BROWSER") }

// Isolation is the browser isolation the suites use: SHOTD_TEST_ISOLATION, or "" for
// cdpclient's default.
func Isolation() string { return os.Getenv("SHOTD_TEST_ISOLATION") }
