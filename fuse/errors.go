package fuse

import "errors"

var (
	// ErrNoKeys means a keyring source (file, environment variable, text)
	// held no key, or a Client was built without a keyring and without
	// WithInsecureUnsigned.
	ErrNoKeys = errors.New("fuse: no keys")

	// ErrNoSigningKey is returned by NewSigner when it has no key to sign
	// with and AllowUnsigned was not given: fusebox must refuse to start
	// rather than publish commands gateways cannot trust.
	ErrNoSigningKey = errors.New("fuse: no signing key (give a key file or FUSEBOX_FUSE_KEYS, or run insecure)")

	// ErrUnsigned: the command has no key id or no signature.
	ErrUnsigned = errors.New("fuse: command is unsigned")
	// ErrUnknownKey: the command's key id is not in the keyring.
	ErrUnknownKey = errors.New("fuse: unknown key id")
	// ErrKeyRetired: the key's not-after time has passed (verifying), or is
	// before the command's issued-at (signing).
	ErrKeyRetired = errors.New("fuse: key retired")
	// ErrBadSignature: the signature does not match the command.
	ErrBadSignature = errors.New("fuse: bad signature")

	// ErrAlreadyRunning is returned by a second call of Client.Run.
	ErrAlreadyRunning = errors.New("fuse: client already running")
	// ErrSourceClosed is returned by Source.Poll once the source is closed.
	ErrSourceClosed = errors.New("fuse: source closed")
)

// RejectReason says why a client did not apply a record. Stats counts
// rejections by reason.
type RejectReason string

const (
	// RejectMalformed: the value is not a valid fuse command
	// (fuseschema.DecodeFuseCommand failed), or it is a tombstone.
	RejectMalformed RejectReason = "malformed"
	// RejectUnsigned: no key id or signature, on a client that is not
	// insecure.
	RejectUnsigned RejectReason = "unsigned"
	// RejectUnknownKey: the key id is not in the client's keyring.
	RejectUnknownKey RejectReason = "unknown_key"
	// RejectKeyRetired: the key's not-after time has passed.
	RejectKeyRetired RejectReason = "key_retired"
	// RejectBadSignature: forged or corrupted.
	RejectBadSignature RejectReason = "bad_signature"
	// RejectDuplicate: the same (issued-at, version) as the command held
	// for the target (a replay or a redelivery).
	RejectDuplicate RejectReason = "duplicate"
	// RejectStale: before the command held for the target in the ordering
	// contract (issued-at, then version) while that one is unexpired (a
	// reordered or replayed older command).
	RejectStale RejectReason = "stale"
	// RejectExpired: expires-at is not after the client's clock.
	RejectExpired RejectReason = "expired"
)

// RejectReasons lists every RejectReason.
var RejectReasons = []RejectReason{
	RejectMalformed, RejectUnsigned, RejectUnknownKey, RejectKeyRetired,
	RejectBadSignature, RejectDuplicate, RejectStale, RejectExpired,
}

// reasonOf maps a Keyring.Verify error to its RejectReason.
func reasonOf(err error) RejectReason {
	switch {
	case errors.Is(err, ErrUnsigned):
		return RejectUnsigned
	case errors.Is(err, ErrUnknownKey):
		return RejectUnknownKey
	case errors.Is(err, ErrKeyRetired):
		return RejectKeyRetired
	case errors.Is(err, ErrBadSignature):
		return RejectBadSignature
	}
	return RejectMalformed
}
