package service

import (
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/blocklist"
)

// loadConsent gives block_cookie_banners autoconsent's script from path ("" disables it). A file
// that cannot be loaded is a warning, not a refusal: renders still hide the banners with the
// cookie-banner list, they only do not reject them.
func loadConsent(lists *blocklist.Library, path string, log zerolog.Logger) {
	if path == "" {
		log.Info().Msg("blocking.autoconsent is empty: block_cookie_banners hides consent dialogs without answering them")
		return
	}
	js, err := blocklist.LoadAutoconsent(path)
	if err != nil {
		log.Warn().Err(err).Str("path", path).Msg("blocking.autoconsent not loaded: block_cookie_banners hides consent dialogs without rejecting them (scripts/install-deps.sh installs autoconsent)")
		return
	}
	lists.Consent = js
	log.Info().Str("path", path).Int("bytes", len(js)).Msg("autoconsent loaded for block_cookie_banners")
}
