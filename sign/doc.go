// Package sign holds the request signatures: shotd's api-v1 scheme (the canonical query and its
// HMAC-SHA256, Sign and VerifySignature), ScreenshotOne's (SignQueryS1 and VerifyQueryS1 over the
// query as sent), and the signature of a webhook's body (SignWebhook).
package sign
