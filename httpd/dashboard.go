package httpd

import _ "embed"

// dashboardHTML is the operator's page: accounts, keys (create, name, revoke, Require signature),
// usage per day as a chart, the recent renders and a playground. It is static; it
// talks to the admin API with the admin token the operator types in, so it needs no session of
// its own (Admin.serveDashboard serves it).
//
//go:embed dashboard/index.html
var dashboardHTML []byte
