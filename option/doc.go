// Package option holds the render options as data and everything that reads them: the option
// table (OptionTable: name, kind, bounds, default, doc, how each value lands in shotd.Options),
// the parsing of a query or a JSON body into Params and of Params into validated Options
// (ParseOptions: defaults, bounds, cross rules, device presets), the ScreenshotOne take options
// and the animate endpoint's translation (AnimateParams), and the storage and proxy options.
// httpd parses a request once with it; /docs/options and the OpenAPI document are drawn from the
// same table.
package option
