package httpd

import (
	"github.com/shotd/shotd/option"
)

// The parts of the OpenAPI document beside the option table: /api/v1/animate, /pressure, the
// webhooks, and an example for every operation.

// animateOperations are GET and POST /api/v1/animate: ScreenshotOne's animate names (those shotd
// honours) beside the screenshot options, whose format is a video format. The options include the
// authentication parameters: GET lists them once, as a parameter must be (ogen refuses twice).
func animateOperations(authQuery []any, withErrors errorsAdder) obj {
	animate := map[string]bool{}
	var params []any
	props := obj{}
	for _, a := range option.AnimateOptions {
		animate[a.Name] = true
		if a.Refuse != "" {
			continue
		}
		sc := animateSchema(a.Name)
		params = append(params, obj{"name": a.Name, "in": "query", "description": "Animate. " + a.Doc, "schema": sc})
		props[a.Name] = sc
	}
	for _, s := range option.OptionTable {
		if animate[s.Name] {
			continue
		}
		sc := optionSchema(s)
		if s.Name == "format" {
			sc = obj{"type": "string", "enum": option.AnimateFormats, "default": "mp4"}
		}
		params = append(params, obj{"name": s.Name, "in": "query", "description": optionDoc(s), "schema": sc})
		props[s.Name] = sc
	}
	ok := obj{"200": obj{"description": "The video (or, with response_type=json, the RenderResult that links to it).",
		"content": obj{
			"video/mp4": obj{"schema": obj{"type": "string", "format": "binary"}}, "video/webm": obj{"schema": obj{"type": "string", "format": "binary"}},
			"image/gif": obj{"schema": obj{"type": "string", "format": "binary"}}, "video/quicktime": obj{"schema": obj{"type": "string", "format": "binary"}},
			"application/json": obj{"schema": ref("schemas", "RenderResult"), "example": exampleVideoResult},
		}},
		"202": ref("responses", "JobAccepted"),
	}
	desc := "ScreenshotOne's animate endpoint: records the page as a video (mp4 by default, 5 seconds). scenario=scroll scrolls it top to bottom; the step-by-step scroll options are refused with invalid_options, saying why."
	return obj{
		"get": obj{"operationId": "animateGet", "tags": []string{"render"}, "summary": "Record a page as a video (options as query parameters)",
			"description": desc, "parameters": params, "responses": withErrors("animateGet", ok)},
		"post": obj{"operationId": "animatePost", "tags": []string{"render"}, "summary": "Record a page as a video (options as a JSON object)",
			"description": desc, "parameters": authQuery,
			"requestBody": obj{"required": true, "content": obj{"application/json": obj{
				"schema":  obj{"type": "object", "properties": props},
				"example": obj{"url": "https://example.com", "scenario": "scroll", "duration": 5, "format": "mp4"},
			}}},
			"responses": withErrors("animatePost", ok)},
	}
}

// pressureOperation is GET /pressure: for a load balancer's health check.
func pressureOperation(withErrors errorsAdder) obj {
	content := func(ex obj) obj {
		return obj{"application/json": obj{"schema": object1([]string{"pressure"}, obj{"pressure": ref("schemas", "Pressure")}),
			"example": obj{"pressure": ex}}}
	}
	room := obj{"running": 3, "queued": 12, "capacity": 8, "free_slots": 5, "free_tabs": 4, "browsers": 2, "browsers_up": 2,
		"chrome_memory_bytes": 912261120, "chrome_oom_kills": 0, "is_available": true, "date": "2026-11-27T05:30:00Z"}
	full := obj{"running": 8, "queued": 40, "capacity": 8, "free_slots": 0, "free_tabs": 0, "browsers": 2, "browsers_up": 2,
		"chrome_memory_bytes": 1812261120, "chrome_oom_kills": 0, "is_available": false, "reason": "every render slot is busy",
		"date": "2026-11-27T05:30:00Z"}
	return obj{"get": obj{"operationId": "pressure", "tags": []string{"health"}, "security": []any{},
		"summary":     "How loaded this node is, and whether it takes more work",
		"description": "No key. 200 while a browser is up and a render slot is free, 503 otherwise, so that a load balancer's health check can take a full node out of rotation. Numbers only.",
		"responses": withErrors("pressure", obj{
			"200": obj{"description": "The node takes more work", "content": content(room)},
			"503": obj{"description": "The node is full or has no browser", "content": content(full)},
		})}}
}

// htmlOperation is a GET of one of the documentation pages.
func htmlOperation(withErrors errorsAdder, id, summary, example string) obj {
	return obj{"get": obj{"operationId": id, "tags": []string{"health"}, "summary": summary, "security": []any{},
		"responses": withErrors(id, obj{"200": obj{"description": "HTML", "content": obj{"text/html": obj{"schema": obj{"type": "string"},
			"example": example}}}})}}
}

func object1(required []string, properties obj) obj {
	return obj{"type": "object", "required": required, "properties": properties}
}

// webhooks describe the POST a job's webhook_url receives when the job ends.
func webhooks() obj {
	h := func(name, desc string, required bool) obj {
		return obj{"name": name, "in": "header", "required": required, "description": desc, "schema": obj{"type": "string"}}
	}
	return obj{"jobEnded": obj{"post": obj{
		"operationId": "jobEnded", "summary": "A job ended (job.succeeded or job.failed)",
		"security":    []any{}, // sent by the service: x-signature, not a key, authenticates it
		"description": "POSTed to the job's webhook_url once the job ended: the job record as GET /api/v1/jobs/{id} shows it, plus event. Any 2xx answer ends the delivery; anything else is retried after each delay of webhooks.retry_delays_seconds. Check x-signature over the raw body before trusting it.",
		"parameters": []any{
			h("x-timestamp", "Unix seconds at which this attempt was signed.", true),
			h("x-signature", "Hex HMAC-SHA256 of \"<x-timestamp>.<raw body>\", keyed with the secret key of the access key that created the job; absent when the job had webhook_sign=false.", false),
			obj{"name": "x-webhook-event", "in": "header", "required": true, "description": "The event.", "schema": obj{"type": "string", "enum": []string{"job.succeeded", "job.failed"}}},
			h("x-job-id", "The job id.", true),
			h("x-webhook-attempt", "1, 2, ...: the attempt of this delivery.", true),
		},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{
			"schema": obj{"allOf": []any{ref("schemas", "Job"), object1([]string{"event"}, obj{
				"event": obj{"type": "string", "enum": []string{"job.succeeded", "job.failed"}}})}},
			"example": withEvent(exampleJobSucceeded, "job.succeeded"),
		}}},
		"responses": obj{"200": obj{"description": "Any 2xx answer: delivered."}},
	}}, "batchDone": obj{"post": obj{
		"operationId": "batchDone", "summary": "Every job of a batch ended (batch.done)",
		"security":    []any{},
		"description": "POSTed once to the webhook_url of a bulk request when every job of the batch ended: the batch record as GET /api/v1/batches/{id} shows it, plus event. Signed and retried as a job's delivery; x-batch-id instead of x-job-id.",
		"parameters": []any{
			h("x-timestamp", "Unix seconds at which this attempt was signed.", true),
			h("x-signature", "Hex HMAC-SHA256 of \"<x-timestamp>.<raw body>\", keyed with the secret key of the access key that made the batch.", true),
			obj{"name": "x-webhook-event", "in": "header", "required": true, "description": "The event.", "schema": obj{"type": "string", "enum": []string{"batch.done"}}},
			h("x-batch-id", "The batch id.", true),
			h("x-webhook-attempt", "1, 2, ...: the attempt of this delivery.", true),
		},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{
			"schema": obj{"allOf": []any{ref("schemas", "Batch"), object1([]string{"event"}, obj{
				"event": obj{"type": "string", "enum": []string{"batch.done"}}})}},
			"example": withEvent(exampleBatchDone, "batch.done"),
		}}},
		"responses": obj{"200": obj{"description": "Any 2xx answer: delivered."}},
	}}}
}

func withEvent(j obj, event string) obj {
	out := obj{"event": event}
	for k, v := range j {
		out[k] = v
	}
	return out
}

// Examples, one per operation, consistent with the schemas.
var (
	exampleResult = obj{"file_id": "f_8ZkqT3nWcQ2vR7xYbL1mAg", "url": "https://shots.example.com/api/v1/files/f_8ZkqT3nWcQ2vR7xYbL1mAg",
		"expires_at": "2026-11-28T05:30:02Z", "format": "png", "content_type": "image/png", "size_bytes": 48213, "render_ms": 412,
		"cache": "MISS", "width": 1280, "height": 1024}
	exampleVideoResult = obj{"file_id": "f_Vq2sP9dLx0TfKc3mBh6nEw", "url": "https://shots.example.com/api/v1/files/f_Vq2sP9dLx0TfKc3mBh6nEw",
		"expires_at": "2026-11-28T05:30:09Z", "format": "mp4", "content_type": "video/mp4", "size_bytes": 912004, "render_ms": 6120,
		"cache": "MISS", "width": 1280, "height": 1024}
	exampleAccepted     = obj{"job_id": "job_Q7v1XcA9dPz4LmT2kR8sWg", "status": "queued", "status_url": "https://shots.example.com/api/v1/jobs/job_Q7v1XcA9dPz4LmT2kR8sWg"}
	exampleJobSucceeded = obj{"job_id": "job_Q7v1XcA9dPz4LmT2kR8sWg", "status": "succeeded", "created_at": "2026-11-27T05:30:00Z",
		"updated_at": "2026-11-27T05:30:02Z", "started_at": "2026-11-27T05:30:01Z", "result": exampleResult,
		"webhook": obj{"url": "https://hooks.example.com/shotd", "status": "pending", "attempts": 0}}
	exampleJobQueued = obj{"job_id": "job_Q7v1XcA9dPz4LmT2kR8sWg", "status": "queued", "created_at": "2026-11-27T05:30:00Z",
		"updated_at": "2026-11-27T05:30:00Z", "queue_position": 3}
	exampleBatch = obj{"batch_id": "bat_Hn4cR1qZ8wVx2TgK5yLp0A", "status": "running", "total": 2,
		"counts":   obj{"queued": 0, "rendering": 1, "succeeded": 1, "failed": 0},
		"progress": obj{"ended": 1, "total": 2, "percent": 50},
		"jobs": []any{
			obj{"job_id": "job_Q7v1XcA9dPz4LmT2kR8sWg", "status": "succeeded", "batch_id": "bat_Hn4cR1qZ8wVx2TgK5yLp0A", "created_at": "2026-11-27T05:30:00Z",
				"updated_at": "2026-11-27T05:30:02Z", "started_at": "2026-11-27T05:30:01Z", "result": exampleResult},
			obj{"job_id": "job_3bXw9TcL2mQa7VnR1pZk4Q", "status": "rendering", "batch_id": "bat_Hn4cR1qZ8wVx2TgK5yLp0A", "created_at": "2026-11-27T05:30:00Z",
				"updated_at": "2026-11-27T05:30:02Z", "started_at": "2026-11-27T05:30:02Z"},
		}}
	exampleBatchDone = obj{"batch_id": "bat_Hn4cR1qZ8wVx2TgK5yLp0A", "status": "done", "total": 1,
		"counts":   obj{"queued": 0, "rendering": 0, "succeeded": 1, "failed": 0},
		"progress": obj{"ended": 1, "total": 1, "percent": 100},
		"webhook":  obj{"url": "https://hooks.example.com/batches", "status": "pending", "attempts": 1},
		"jobs": []any{obj{"job_id": "job_Q7v1XcA9dPz4LmT2kR8sWg", "status": "succeeded", "batch_id": "bat_Hn4cR1qZ8wVx2TgK5yLp0A",
			"created_at": "2026-11-27T05:30:00Z", "updated_at": "2026-11-27T05:30:02Z", "started_at": "2026-11-27T05:30:01Z", "result": exampleResult}}}
	exampleBulkRequest = obj{"requests": []any{obj{"url": "https://example.com"}, obj{"url": "https://example.org", "format": "pdf"}},
		"defaults": obj{"viewport_width": 1280, "webhook_url": "https://hooks.example.com/shotd"}}
	exampleBulkAccepted = obj{"batch_id": "bat_Hn4cR1qZ8wVx2TgK5yLp0A", "status": "queued", "total": 2,
		"jobs": []any{obj{"index": 0, "job_id": "job_Q7v1XcA9dPz4LmT2kR8sWg"}, obj{"index": 1, "job_id": "job_3bXw9TcL2mQa7VnR1pZk4Q"}}}
	exampleUsage = obj{"quota": obj{"limit": 1000, "used": 120, "remaining": 880, "bonus": 0, "reset": "2026-12-01T00:00:00Z"},
		"requests_per_minute": 60, "status_requests_per_minute": 600, "concurrency": 4, "queue_limit": 100, "failures_per_minute": 30,
		"renders": obj{"succeeded": 118, "failed": 2, "cache_hits": 14}}
	exampleOptions = obj{"url": "https://example.com", "format": "png", "viewport_width": 1280, "full_page": true, "block_cookie_banners": true}
)

// statusExamples are the examples of the status endpoints, by their schema.
var statusExamples = map[string]any{"Usage": exampleUsage, "Job": exampleJobQueued, "Batch": exampleBatch}

// exampleBinary gives each file type of content a placeholder example: a file's bytes cannot
// be shown in JSON.
func exampleBinary(content obj) obj {
	for _, v := range content {
		if m, ok := v.(obj); ok {
			m["example"] = "(the file's bytes)"
		}
	}
	return content
}

// animateSchema is the type of one of the animate names.
func animateSchema(name string) obj {
	switch name {
	case "scenario":
		return obj{"type": "string", "enum": []string{"default", "scroll"}, "default": "default"}
	case "duration":
		return obj{"type": "integer", "minimum": 1, "maximum": 30, "default": 5}
	case "width", "height":
		return obj{"type": "integer", "minimum": 1}
	case "scroll_easing":
		return obj{"type": "string"}
	}
	return obj{"type": "boolean"}
}
