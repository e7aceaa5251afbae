# shotd signing in Python 3, standard library only.
import hashlib
import hmac
import time
from urllib.parse import quote


def _enc(s):
    # RFC 3986: keep A-Z a-z 0-9 - . _ ~, every other UTF-8 byte %XX upper case (space: %20).
    return quote(str(s), safe="-._~")


def signed_url(base_url, path, params, secret_key):
    """A signed link: params is a list of (name, value) pairs, access_key and expires included."""
    pairs = sorted((_enc(k), _enc(v)) for k, v in params if k != "signature")
    query = "&".join(f"{k}={v}" for k, v in pairs)
    # /api/v1/take signs as /api/v1/screenshot; every other path signs as sent.
    signing_path = "/api/v1/screenshot" if path == "/api/v1/take" else path
    sig = hmac.new(secret_key.encode(), f"{signing_path}?{query}".encode(), hashlib.sha256).hexdigest()
    return f"{base_url}{path}?{query}&signature={sig}"


def verify_webhook(secret_key, x_timestamp, x_signature, raw_body, tolerance=300):
    """True when a delivery is shotd's: x-signature is the hex HMAC-SHA256 of
    "<x-timestamp>.<raw body>" and x-timestamp is within tolerance seconds of now.
    raw_body is the bytes as received: never re-encode the JSON before checking."""
    try:
        ts = int(x_timestamp)
    except (TypeError, ValueError):
        return False
    if abs(time.time() - ts) > tolerance:
        return False  # a replayed old delivery
    want = hmac.new(secret_key.encode(), x_timestamp.encode() + b"." + raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, (x_signature or "").lower())


# Example:
#   url = signed_url("https://shots.example.com", "/api/v1/screenshot",
#                    [("access_key", ACCESS_KEY), ("url", "https://example.com"),
#                     ("expires", str(int(time.time()) + 300))], SECRET_KEY)
#   ok = verify_webhook(SECRET_KEY, request.headers["x-timestamp"],
#                       request.headers.get("x-signature"), request.get_data())
