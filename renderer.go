package shotd

import "context"

// Renderer renders validated options into an output. The browser pool implements it, and the
// wrappers that meter and upload a render take and return one: service/ composes them into the
// one pipeline that the public API and the job actor both use. Errors are catalogue errors.
type Renderer interface {
	Render(ctx context.Context, o *Options) (*Output, error)
}

// RenderFunc adapts a function to Renderer.
type RenderFunc func(ctx context.Context, o *Options) (*Output, error)

// Render calls f.
func (f RenderFunc) Render(ctx context.Context, o *Options) (*Output, error) { return f(ctx, o) }
