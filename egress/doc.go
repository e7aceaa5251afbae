// Package egress owns the guard that keeps every outbound connection of the service away from
// private, local and internal addresses: the page Chrome loads with its redirects, subresources
// and websockets, and the webhook deliveries.
//
// It has five parts, each usable alone:
//
//   - Policy classifies one address. It is a pure function over a fixed table of the IANA
//     special-purpose blocks, looks inside the IPv6 forms that embed an IPv4 address (mapped,
//     NAT64, 6to4, Teredo), lets network.allow_private through and lets an explicit deny list win
//     over that. It never does DNS. WithHostAddrs adds the host's own interface addresses
//     (InterfaceAddrs reads them), which reach the host's services as loopback does.
//   - ParseHostLiteral recognises every spelling of an IP address that a browser accepts in a URL
//     host (2130706433, 0x7f.1, 0177.0.0.1, 127.1, [::1], fe80::1%25eth0, full-width digits ...),
//     following the WHATWG URL host parser (shotd.ParseHost), so that a literal is never mistaken
//     for a name.
//   - Guard resolves a name once, refuses the name if any of its addresses is refused, and dials
//     only the addresses it checked, so DNS rebinding has no window between check and connect.
//     Guard.DialContext fits http.Transport.DialContext for webhooks; Guard.CheckURL is the
//     pre-check of a render's url. Guard.DenyPort refuses one listener (the service's own, its
//     proxies', its bucket's) whatever the allow list says.
//   - Proxy is the HTTP forward proxy (absolute-form requests and CONNECT tunnels) that Chrome is
//     launched behind, so that every connection a page makes is dialled by the Guard. Host names
//     Chrome contacts on its own (DefaultDenyHosts) are refused before any DNS. Refusals answer
//     403 with the X-Shotd-Refused header.
//   - Route is a Proxy of one browser context, on a loopback port of its own, refused to every
//     page while it lives: that port is what ties the context to it. Guard.OpenDirectRoute's
//     dials directly, as the shared Proxy does; it is the route of one tab, and Route.Block ends
//     every connection it holds (the context's to it, its tunnels, its requests under way, its
//     own to servers) and answers 503 until Route.Unblock, so that no connection outlives a
//     render. Guard.OpenRoute's is a one-off for one render whose way out is the user's upstream
//     HTTP proxy (the proxy option): the Guard checks every destination as above and the
//     upstream is asked for the checked address; bypass hosts are dialled directly. A route
//     records what it refused or could not reach (Route.Troubles), which is how a render tells
//     that its page's document was refused without pausing the request inside Chrome, and
//     whether a plain-text request in its tunnels (a ws:// handshake) carried credentials that
//     Chrome then keeps in its HTTP auth cache (Route.SawCredentials).
//
// ObserveRefusals reports every refusal's reason, for the metrics.
//
// Errors are *shotd.Error values: host_not_allowed for a refusal (the cause, a *RefusedError, says
// which address and why and is for the log only), invalid_options for a url that is not http or
// https, navigation_failed for a name that does not resolve.
package egress
