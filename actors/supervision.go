package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// supervision is how every actor of shotd is supervised, written out rather than left to
// protoactor's default (which it equals): a panic in Receive restarts the actor that panicked,
// alone. A restart runs Restarting, then the producer and Started again, so an actor releases
// there what it holds and takes it up anew: a browser actor closes its Chrome and launches
// another, the supervisor respawns its browser actors. Ten restarts within ten seconds are a
// fault that restarting does not mend: the actor is then stopped, and what is sent to it ends
// at the sender's own deadline instead of feeding a restart loop.
var supervision = actor.NewOneForOneStrategy(10, 10*time.Second, actor.DefaultDecider)

// topProps are the props of an actor that the system's root spawns: a guardian supervises it
// (supervision), and it supervises its own children the same way.
func topProps(p actor.Producer) *actor.Props {
	return actor.PropsFromProducer(p, actor.WithGuardian(supervision), actor.WithSupervisor(supervision))
}

// childProps are the props of an actor that another one spawns and supervises.
func childProps(p actor.Producer) *actor.Props {
	return actor.PropsFromProducer(p, actor.WithSupervisor(supervision))
}
