package fuse

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// Signature is lower-case hex of HMAC-SHA256(secret, c.CanonicalBytes()),
// where the canonical bytes (fuseschema/codec.go) include the key id.
func signature(secret []byte, c *fuseschema.FuseCommand) (string, error) {
	msg, err := c.CanonicalBytes()
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, secret)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// Sign returns c signed with the active key: KeyID set to its id and
// Signature to the HMAC. It fails with ErrKeyRetired when the active key's
// not-after is before c's issued-at, and with the validation error when c
// is not a valid command.
func (r *Keyring) Sign(c fuseschema.FuseCommand) (fuseschema.FuseCommand, error) {
	k := r.keys[r.active]
	if !k.notAfter.IsZero() && time.Unix(0, c.IssuedAtUnixNano).After(k.notAfter) {
		return c, fmt.Errorf("%w: active key %q not-after %s is before the command's issued-at", ErrKeyRetired, k.id, k.notAfter.UTC().Format(time.RFC3339))
	}
	c.KeyID, c.Signature = k.id, ""
	sig, err := signature(k.secret, &c)
	if err != nil {
		return c, err
	}
	c.Signature = sig
	return c, nil
}

// Verify checks c's signature with the key its KeyID names, at time now
// (for the key's not-after). Errors wrap ErrUnsigned, ErrUnknownKey,
// ErrKeyRetired or ErrBadSignature. The comparison is constant-time.
func (r *Keyring) Verify(c *fuseschema.FuseCommand, now time.Time) error {
	if c.KeyID == "" || c.Signature == "" {
		return ErrUnsigned
	}
	k, ok := r.keys[c.KeyID]
	if !ok {
		return fmt.Errorf("%w %s", ErrUnknownKey, strconv.Quote(c.KeyID))
	}
	if !k.notAfter.IsZero() && now.After(k.notAfter) {
		return fmt.Errorf("%w: key %q not-after %s", ErrKeyRetired, k.id, k.notAfter.UTC().Format(time.RFC3339))
	}
	want, err := signature(k.secret, c)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if !hmac.Equal([]byte(want), []byte(c.Signature)) {
		return fmt.Errorf("%w (key %q)", ErrBadSignature, k.id)
	}
	return nil
}

// Signer signs the commands the engine publishes. Build it with NewSigner;
// it is safe for concurrent use.
type Signer struct {
	ring *Keyring
}

// SignerOpt configures NewSigner.
type SignerOpt interface{ applySigner(*signerCfg) }

type signerCfg struct{ allowUnsigned bool }

type signerOpt func(*signerCfg)

func (f signerOpt) applySigner(c *signerCfg) { f(c) }

// AllowUnsigned lets NewSigner run without keys: commands then go out
// unsigned (KeyID and Signature empty), and only clients built with
// WithInsecureUnsigned accept them. fusebox maps --insecure-unsigned to it.
// With keys present it changes nothing.
func AllowUnsigned() SignerOpt {
	return signerOpt(func(c *signerCfg) { c.allowUnsigned = true })
}

// NewSigner returns a signer that signs with ring's active key. A nil ring
// is ErrNoSigningKey unless AllowUnsigned is given.
func NewSigner(ring *Keyring, opts ...SignerOpt) (*Signer, error) {
	var cfg signerCfg
	for _, o := range opts {
		o.applySigner(&cfg)
	}
	if ring == nil && !cfg.allowUnsigned {
		return nil, ErrNoSigningKey
	}
	return &Signer{ring: ring}, nil
}

// Unsigned reports whether the signer leaves commands unsigned.
func (s *Signer) Unsigned() bool { return s.ring == nil }

// KeyID is the id of the signing key ("" when unsigned).
func (s *Signer) KeyID() string {
	if s.ring == nil {
		return ""
	}
	return s.ring.active
}

// Sign signs c (see Keyring.Sign); an unsigned signer clears KeyID and
// Signature and only validates c.
func (s *Signer) Sign(c fuseschema.FuseCommand) (fuseschema.FuseCommand, error) {
	if s.ring == nil {
		c.KeyID, c.Signature = "", ""
		return c, c.Validate()
	}
	return s.ring.Sign(c)
}

// SignAll signs cmds in place, stopping at the first error.
func (s *Signer) SignAll(cmds []fuseschema.FuseCommand) error {
	for i := range cmds {
		c, err := s.Sign(cmds[i])
		if err != nil {
			return fmt.Errorf("fuse: sign command %d (target %s, version %d): %w", i, cmds[i].Target.String(), cmds[i].Version, err)
		}
		cmds[i] = c
	}
	return nil
}
