package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// NewSystem creates the actor system with protoactor's own logs sent through zerolog.
func NewSystem(log zerolog.Logger) *actor.ActorSystem {
	l := log.With().Str("component", "protoactor").Logger()
	return actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(&slogToZerolog{l: l}) }),
		// Replies to requesters that gave up are normal (a timed-out HTTP request); do not log them.
		actor.WithDeadLetterRequestLogging(false),
	)
}

// slogToZerolog is a slog.Handler writing to zerolog.
type slogToZerolog struct {
	l     zerolog.Logger
	attrs []slog.Attr
	group string
}

func (h *slogToZerolog) Enabled(_ context.Context, lvl slog.Level) bool {
	return h.l.GetLevel() <= zlevel(lvl)
}

func (h *slogToZerolog) Handle(_ context.Context, r slog.Record) error {
	ev := h.l.WithLevel(zlevel(r.Level))
	add := func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		ev = ev.Interface(key, a.Value.Any())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	ev.Msg(r.Message)
	return nil
}

func (h *slogToZerolog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &c
}

func (h *slogToZerolog) WithGroup(name string) slog.Handler {
	c := *h
	c.group = name
	return &c
}

func zlevel(l slog.Level) zerolog.Level {
	switch {
	case l >= slog.LevelError:
		return zerolog.ErrorLevel
	case l >= slog.LevelWarn:
		return zerolog.WarnLevel
	case l >= slog.LevelInfo:
		return zerolog.InfoLevel
	default:
		return zerolog.DebugLevel
	}
}
