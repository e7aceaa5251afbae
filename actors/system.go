package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// NewSystem creates the actor system with protoactor's own logs sent through zerolog.
func NewSystem(log zerolog.Logger) *actor.ActorSystem {
	l := log.With().Str("component", "protoactor").Logger()
	return actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(zerolog.NewSlogHandler(l)) }),
		// Replies to requesters that gave up are normal (a timed-out HTTP request); do not log them.
		actor.WithDeadLetterRequestLogging(false),
	)
}
