// Package fuse is what a gateway embeds to act on fusebox's fuse commands,
// and what fusebox uses to sign them.
//
// fusebox's breaker publishes one command per change of a target's state
// to the compacted topic fusebox.fuse, keyed by target
// (fuseschema.Key.String), valued by the canonical JSON of
// fuseschema.FuseCommand (fuse/fuseschema/fuse_command.v1.schema.json),
// signed with HMAC-SHA256.
//
// # Gateways
//
//	ring, err := fuse.LoadKeyringFile("/etc/fusebox/fuse.keys") // or fuse.KeyringFromEnv()
//	c, err := fuse.NewClient(fuse.WithBrokers("kafka:9092"), fuse.WithKeyring(ring))
//	go c.Run(ctx)          // reads the topic from the start, then follows it
//	c.WaitReady(ctx)       // the state is rebuilt up to the end offsets seen at start
//	d := c.Decide(key)     // per request: Allow, Degrade(Fallback), Reject, Throttle, Rollback
//	switch d.Admit(rand.Float64()) { ... }
//
// The Client reads every partition from the earliest offset without a
// consumer group, so a gateway that starts late rebuilds the current state
// from the compacted topic, then follows it. Every record is checked and
// either applied or rejected and counted by reason (Stats):
//
//   - malformed: not a valid command (strict decoding, see
//     fuseschema.DecodeFuseCommand), or a tombstone;
//   - unsigned, unknown_key, key_retired, bad_signature: the signature does
//     not verify with the keyring at the client's clock;
//   - duplicate, stale: the command is not after the one held for the
//     target in the ordering below (a replay, a redelivery, a reordered
//     older command);
//   - expired: expires-at is not after the client's clock.
//
// A rejected command is never applied.
//
// # Ordering
//
// A target's commands are ordered by (issued_at_unix_nano, version),
// compared as integers, issued-at first (fuseschema.CompareFuseOrder). A
// verified, unexpired command replaces the one held for its target when
// it is after it, or when the held one has expired at the client's clock:
// an expired command's version stops counting. So a command with version
// 2^64−1 blocks no command issued after it, and once it expires none at
// all; a running gateway never needs a restart to get unstuck. Both
// fields are inside the signed canonical bytes (fuseschema.FuseCommand
// canonical form: the record value without its final signature member),
// so the ordering cannot be changed without the key. fusebox's commands
// of a target are strictly increasing in this order, across restarts: see
// processors/breaker (versions from an event-time base, issued-at the
// evaluation's event time). The clock (WithClock, default
// time.Now) is the gateway's wall clock: commands carry event times, and
// fusebox refreshes a command of an open target well before it expires, so
// a gateway whose fusebox stopped goes back to normal within one TTL.
//
// Decide picks, among the commands in effect whose target matches the
// request's key, the most specific target (most non-wildcard dimensions),
// then the highest level. Half-open targets and throttles come with a
// Fraction to admit; Decision.Admit resolves them with a sample the gateway
// draws, so the library itself holds no randomness. OnChange reports every
// applied command (old and new), e.g. to log or to export metrics.
//
// The default source is franz-go (KgoSource); package fuse/kafkago has one
// on segmentio/kafka-go; any Source will do. Package fuse/fusehttp applies
// the decisions to an OpenAI-compatible HTTP proxy (net/http middleware).
//
// # Keys and rotation
//
// Keys are HMAC secrets with ids, in a file or the environment variable
// FUSEBOX_FUSE_KEYS, one entry per line or comma-separated:
//
//	# id:secret [not-after=RFC3339] [active]
//	k2025-12:3f9a...64 hex digits... not-after=2026-01-15T00:00:00Z
//	k2026-01:base64:q83v...                       # newest: signs
//
// The signer (fusebox) uses the key marked active, else the last one;
// verifiers (gateways) accept any key of their ring until its not-after. To
// rotate: add the new key to every gateway's ring, then make it fusebox's
// active key, then give the old key a not-after (the overlap lets commands
// signed with either verify), then remove it. Secrets are never printed:
// Key and Keyring format as their ids.
//
// # Signing
//
// A Signer signs with the active key. NewSigner refuses to work without a
// key (ErrNoSigningKey) unless AllowUnsigned is given (fusebox's
// --insecure-unsigned); gateways accept unsigned commands only with
// WithInsecureUnsigned.
//
// # Module
//
// Package fuse, fuse/fusehttp and fuse/fuseschema (the command, its Key and
// codec: standard library only) are the module
// github.com/fusebox-dev/fusebox/fuse, which requires franz-go and nothing
// else (module_test.go keeps it so), so a gateway inherits none of
// fusebox's own dependencies. fuse/kafkago, on segmentio/kafka-go, is a
// module of its own.
package fuse
