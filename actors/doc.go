// Package actors holds the protoactor-go actors of shotd: the renderer supervisor and one actor per
// Chrome process (this file set), and, in later files, one actor per account and the job and
// webhook actors. An actor owns its state alone; nothing blocks a mailbox on a render, a disk write
// or a network call: slow work runs in goroutines that report back with a message.
package actors
