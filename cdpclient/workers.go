package cdpclient

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/target"
)

// Dedicated workers of a page get the WebSocket blocking too. A worker is a target of its own,
// which Page.addScriptToEvaluateOnNewDocument does not reach: the page's target auto-attaches to
// its workers (and only to them, so frames are never held) with waitForDebuggerOnStart, and each
// worker gets the script by Runtime.evaluate in its global scope before runIfWaitingForDebugger
// lets its own code start. The messages go through the page connection
// (Target.sendMessageToTarget): a worker's session has no socket of its own. Shared and service
// workers belong to the browser, not to the page, and stay uncovered, as do workers that a worker
// starts.

// workerMessage is one CDP command sent to a worker's session.
type workerMessage struct {
	ID     int    `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// workerSetupWait bounds the two commands that set up one worker.
const workerSetupWait = 5 * time.Second

// blockWorkerSockets starts the auto-attach; the stream ends when the render closes it.
func (r *render) blockWorkerSockets(ctx context.Context, script string) error {
	c := r.t.c
	attached, err := c.Target.AttachedToTarget(ctx)
	if err != nil {
		return err
	}
	r.workers = attached
	r.t.over.autoAttach = true
	yes, no, worker := true, false, "worker"
	filter := target.Filter{{Type: &worker, Exclude: &no}, {Exclude: &yes}}
	if err := c.Target.SetAutoAttach(ctx, target.NewSetAutoAttachArgs(true, true).SetFlatten(false).SetFilter(filter)); err != nil {
		return err
	}
	eval := runtime.NewEvaluateArgs(script)
	send := func(session target.SessionID, m workerMessage) error {
		b, _ := json.Marshal(m)
		ctx, cancel := context.WithTimeout(context.Background(), workerSetupWait)
		defer cancel()
		return c.Target.SendMessageToTarget(ctx, target.NewSendMessageToTargetArgs(string(b)).SetSessionID(session))
	}
	// Tracked by the Process (Close waits for it); it ends when the render closes the stream or
	// the page's connection goes.
	if !r.p.spawn(func() {
		for {
			ev, err := attached.Recv()
			if err != nil {
				return
			}
			if ev.TargetInfo.Type == "worker" {
				if err := send(ev.SessionID, workerMessage{1, "Runtime.evaluate", eval}); err != nil {
					r.p.log.Debug().Err(err).Str("worker", ev.TargetInfo.URL).Msg("worker script")
				}
			}
			// Whatever the evaluation gave, the worker must run: it would wait forever. Its own
			// deadline, so a slow first message cannot take this one's time.
			if err := send(ev.SessionID, workerMessage{2, "Runtime.runIfWaitingForDebugger", nil}); err != nil {
				r.p.log.Debug().Err(err).Str("worker", ev.TargetInfo.URL).Msg("worker resume")
			}
		}
	}) {
		return errClosed
	}
	return nil
}
