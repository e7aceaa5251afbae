// shotd signing in Node.js (18 or later), standard library only.
const crypto = require("node:crypto");

// RFC 3986: keep A-Z a-z 0-9 - . _ ~, every other UTF-8 byte %XX upper case (space: %20).
const enc = (s) =>
  encodeURIComponent(String(s)).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());

// A signed link: params is a list of [name, value] pairs, access_key and expires included.
function signedURL(baseURL, path, params, secretKey) {
  const pairs = params.filter(([k]) => k !== "signature").map(([k, v]) => [enc(k), enc(v)]);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const query = pairs.map(([k, v]) => `${k}=${v}`).join("&");
  // /api/v1/take signs as /api/v1/screenshot; every other path signs as sent.
  const signingPath = path === "/api/v1/take" ? "/api/v1/screenshot" : path;
  const sig = crypto.createHmac("sha256", secretKey).update(`${signingPath}?${query}`).digest("hex");
  return `${baseURL}${path}?${query}&signature=${sig}`;
}

// True when a delivery is shotd's: x-signature is the hex HMAC-SHA256 of
// "<x-timestamp>.<raw body>" and x-timestamp is within tolerance seconds of now. rawBody is the
// Buffer as received: never re-encode the JSON before checking.
function verifyWebhook(secretKey, xTimestamp, xSignature, rawBody, tolerance = 300) {
  if (!/^[0-9]+$/.test(xTimestamp || "")) return false;
  if (Math.abs(Date.now() / 1000 - Number(xTimestamp)) > tolerance) return false; // replayed
  const want = crypto.createHmac("sha256", secretKey).update(`${xTimestamp}.`).update(rawBody).digest();
  const got = Buffer.from(xSignature || "", "hex");
  return got.length === want.length && crypto.timingSafeEqual(got, want);
}

// Example:
//   const url = signedURL("https://shots.example.com", "/api/v1/screenshot",
//     [["access_key", ACCESS_KEY], ["url", "https://example.com"],
//      ["expires", String(Math.floor(Date.now() / 1000) + 300)]], SECRET_KEY);
//   const ok = verifyWebhook(SECRET_KEY, req.headers["x-timestamp"], req.headers["x-signature"], rawBody);

module.exports = { signedURL, verifyWebhook };
