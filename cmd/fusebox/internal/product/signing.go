package product

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/observe"
)

// errSigningKeyExpired is returned for an active signing key past its
// not-after: every gateway would reject every command signed with it.
var errSigningKeyExpired = errors.New("the active fuse signing key is past its not-after: every gateway rejects what it signs")

// CheckSigningKey checks ring's active key at now (wall time): an error
// when its not-after has passed, a warning (else "") when it passes within
// warnWithin. src names where the keys came from.
func CheckSigningKey(ring *fuse.Keyring, src string, now time.Time, warnWithin time.Duration) (warning string, err error) {
	k, _ := ring.Key(ring.Active())
	na := k.NotAfter()
	if na.IsZero() {
		return "", nil
	}
	when := na.UTC().Format(time.RFC3339)
	if !now.Before(na) {
		return "", fmt.Errorf("%w: key %q from %s, not-after %s (%v ago); make a newer key active (list it last, or mark it active, or set signing.active_key)",
			errSigningKeyExpired, k.ID(), src, when, now.Sub(na).Round(time.Second))
	}
	if na.Sub(now) <= warnWithin {
		return fmt.Sprintf("the active fuse signing key %q from %s expires at %s (in %v): rotate it before then, or gateways reject every command after it",
			k.ID(), src, when, na.Sub(now).Round(time.Second)), nil
	}
	return "", nil
}

// watchSigningKey logs the warning of CheckSigningKey once when the active
// key enters its warning window and an error once when it expires, checking
// every interval until ctx ends.
func watchSigningKey(ctx context.Context, log *slog.Logger, ring *fuse.Keyring, src string, warnWithin, every time.Duration) {
	warned, failed := false, false
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		warn, err := CheckSigningKey(ring, src, time.Now(), warnWithin)
		switch {
		case err != nil && !failed:
			log.Error(err.Error())
			failed = true
		case warn != "" && !warned:
			log.Warn(warn)
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SigningKeyMetrics exports fusebox_signing_key_not_after_seconds{key}: the
// active key's not-after (Unix seconds), when it has one, so that an alert
// can fire before it passes (e.g. < time() + 7d).
func SigningKeyMetrics(ring *fuse.Keyring) observe.Source {
	return observe.SourceFunc(func(s *observe.Snapshot) {
		if ring == nil {
			return
		}
		k, _ := ring.Key(ring.Active())
		if k.NotAfter().IsZero() {
			return
		}
		s.Extra = append(s.Extra, observe.Sample{Name: "fusebox_signing_key_not_after_seconds",
			Help: "Not-after of the active fuse signing key (Unix seconds); after it gateways reject the commands it signs.",
			Kind: observe.GaugeSample, Value: float64(k.NotAfter().Unix()), Labels: []observe.Label{{Name: "key", Value: k.ID()}}})
	})
}

// newSigner builds the fuse command signer of c, and says how it signs
// (never the secret): "key ID from SOURCE", or "unsigned". The active key
// must not be past its not-after (at now).
func newSigner(c *Config, now time.Time) (*fuse.Signer, string, error) {
	if c.Keys == nil {
		if !c.Unsigned && !c.File.Signing.InsecureUnsigned {
			return nil, "", ErrNoKeys
		}
		sg, err := fuse.NewSigner(nil, fuse.AllowUnsigned())
		return sg, "unsigned", err
	}
	if _, err := CheckSigningKey(c.Keys, c.KeysSource, now, c.File.Signing.ExpiryWarning); err != nil {
		return nil, "", err
	}
	sg, err := fuse.NewSigner(c.Keys)
	if err != nil {
		return nil, "", err
	}
	desc := "key " + c.Keys.Active()
	if c.KeysSource != "" {
		desc += " from " + c.KeysSource
	}
	return sg, desc, nil
}
