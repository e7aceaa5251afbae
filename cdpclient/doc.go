// Package cdpclient owns Chrome processes and speaks the raw Chrome DevTools Protocol to them
// through github.com/mafredri/cdp.
//
// A Process is one Chrome in its own process group with its own throw-away user-data dir. Launch
// starts it and reads its DevTools address from stderr; Close stops it (Browser.close, then
// SIGKILL to the group, then reap, then remove the dir) and waits for every goroutine it started.
// Exited and Disconnected report the two crash signals; the actor that owns the Process turns them
// into one message.
//
// One Render is one fresh browser context with one target in it, disposed afterwards whatever
// happened, so concurrent renders share no cookies, storage, cache or service workers. Creating a
// context and a target costs more than a render of a small page, so each Process keeps a few
// ready pairs (Config.Prewarm), refilled in the background, and disposes used pairs off the
// response path.
//
// Every error that leaves the package is a *shotd.Error.
package cdpclient
