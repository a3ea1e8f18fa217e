package fuse

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// EnvKeys is the environment variable KeyringFromEnv reads.
const EnvKeys = "FUSEBOX_FUSE_KEYS"

// MinSecretBytes is the shortest HMAC secret accepted: 32 bytes, the
// output size of SHA-256 (RFC 2104 recommends no less).
const MinSecretBytes = 32

// Key is one HMAC-SHA256 key with its id and optional not-after time. Its
// secret never leaves the package: String, GoString and Format print the
// id only, so a Key (or a Keyring) can be logged safely.
type Key struct {
	id       string
	secret   []byte
	notAfter time.Time
}

// NewKey checks and copies a key. id is 1 to 64 characters from
// [A-Za-z0-9._-]; secret at least MinSecretBytes; a zero notAfter means
// the key never retires.
func NewKey(id string, secret []byte, notAfter time.Time) (Key, error) {
	if id == "" || !fuseschema.ValidKeyID(id) {
		return Key{}, &KeyError{KeyID: id, Reason: "key id must be 1 to 64 characters from [A-Za-z0-9._-]"}
	}
	if len(secret) < MinSecretBytes {
		return Key{}, &KeyError{KeyID: id, Reason: "secret shorter than " + strconv.Itoa(MinSecretBytes) + " bytes (" + strconv.Itoa(len(secret)) + ")"}
	}
	return Key{id: id, secret: slices.Clone(secret), notAfter: notAfter}, nil
}

// ID returns the key id.
func (k Key) ID() string { return k.id }

// NotAfter returns when verifiers stop accepting the key (zero: never).
func (k Key) NotAfter() time.Time { return k.notAfter }

// String prints the id, never the secret.
func (k Key) String() string {
	s := "fuse.Key(" + k.id
	if !k.notAfter.IsZero() {
		s += ", not-after " + k.notAfter.UTC().Format(time.RFC3339)
	}
	return s + ", secret redacted)"
}

// GoString is String, for %#v.
func (k Key) GoString() string { return k.String() }

// Format prints String for every verb, so no fmt verb reveals the secret.
func (k Key) Format(f fmt.State, _ rune) { io.WriteString(f, k.String()) }

// Format prints String for every verb (see Key.Format).
func (r Keyring) Format(f fmt.State, _ rune) { io.WriteString(f, r.String()) }

// KeyError says which key entry is wrong. It never holds secret material.
type KeyError struct {
	// Source is the file name or environment variable ("" for text).
	Source string
	// Entry is the 1-based entry number in the source (0 when not parsed).
	Entry int
	// KeyID is the entry's key id, when it could be read.
	KeyID  string
	Reason string
}

func (e *KeyError) Error() string {
	var b strings.Builder
	b.WriteString("fuse: keys")
	if e.Source != "" {
		b.WriteString(" " + strconv.Quote(e.Source))
	}
	if e.Entry > 0 {
		b.WriteString(" entry " + strconv.Itoa(e.Entry))
	}
	if e.KeyID != "" {
		b.WriteString(" (key id " + strconv.Quote(e.KeyID) + ")")
	}
	return b.String() + ": " + e.Reason
}

// Keyring holds the keys a signer signs with and a verifier accepts. It is
// immutable and safe for concurrent use; rotate keys by building a new
// Keyring (and a new Signer or Client).
type Keyring struct {
	keys   map[string]Key
	order  []string
	active string
}

// NewKeyring builds a keyring. active names the signing key; "" picks the
// last key given (list keys oldest first). Ids must be unique.
func NewKeyring(active string, keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	r := &Keyring{keys: make(map[string]Key, len(keys))}
	for _, k := range keys {
		if k.id == "" {
			return nil, &KeyError{Reason: "a key has no id (build keys with NewKey)"}
		}
		if _, dup := r.keys[k.id]; dup {
			return nil, &KeyError{KeyID: k.id, Reason: "key id listed twice"}
		}
		r.keys[k.id] = k
		r.order = append(r.order, k.id)
	}
	if active == "" {
		active = r.order[len(r.order)-1]
	}
	if _, ok := r.keys[active]; !ok {
		return nil, &KeyError{KeyID: active, Reason: "the active key is not in the keyring"}
	}
	r.active = active
	return r, nil
}

// IDs returns the key ids in the order given.
func (r *Keyring) IDs() []string { return slices.Clone(r.order) }

// Active returns the id of the signing key.
func (r *Keyring) Active() string { return r.active }

// Key returns the key with the given id.
func (r *Keyring) Key(id string) (Key, bool) {
	k, ok := r.keys[id]
	return k, ok
}

// String lists the key ids and the active one, never secrets. It has a
// value receiver so that a Keyring printed by value is redacted too.
func (r Keyring) String() string {
	return "fuse.Keyring(" + strings.Join(r.order, ",") + "; active " + r.active + ")"
}

// ParseKeyring reads keys from text in the key-file format:
//
//	# comment to the end of the line
//	id:secret [not-after=RFC3339] [active]
//
// Entries are separated by newlines or commas (so that one environment
// variable can hold several: "k1:SECRET1 not-after=2026-03-01T00:00:00Z,k2:SECRET2").
// The secret is hex ("hex:" prefix optional) or, with the "base64:" prefix
// only, base64 (standard or URL alphabet, padded or not). A bare secret
// that is not hex is an error, never guessed to be base64. Decoded secrets
// must be at least MinSecretBytes long. The key marked active signs; with
// none marked, the last entry does. Keys are listed oldest first. Errors
// are *KeyError naming the entry and key id, never the secret.
func ParseKeyring(text string) (*Keyring, error) {
	return parseKeyring("", text)
}

// LoadKeyringFile reads a key file (ParseKeyring's format). Keep it
// readable by the fusebox and gateway users only.
func LoadKeyringFile(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fuse: key file: %w", err)
	}
	return parseKeyring(path, string(b))
}

// KeyringFromEnv reads the keys in the environment variable EnvKeys
// (FUSEBOX_FUSE_KEYS), in ParseKeyring's format. It returns ErrNoKeys when
// the variable is unset or empty.
func KeyringFromEnv() (*Keyring, error) {
	v := os.Getenv(EnvKeys)
	if strings.TrimSpace(v) == "" {
		return nil, ErrNoKeys
	}
	return parseKeyring(EnvKeys, v)
}

func parseKeyring(source, text string) (*Keyring, error) {
	var keys []Key
	active := ""
	entry := 0
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, e := range strings.Split(line, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			entry++
			k, isActive, err := parseEntry(e)
			if err != nil {
				err.Source, err.Entry = source, entry
				return nil, err
			}
			if isActive {
				if active != "" {
					return nil, &KeyError{Source: source, Entry: entry, KeyID: k.id, Reason: "more than one key marked active (" + active + ")"}
				}
				active = k.id
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		if source != "" {
			return nil, fmt.Errorf("%w in %s", ErrNoKeys, source)
		}
		return nil, ErrNoKeys
	}
	r, err := NewKeyring(active, keys...)
	if ke, ok := err.(*KeyError); ok {
		ke.Source = source
	}
	return r, err
}

func parseEntry(e string) (Key, bool, *KeyError) {
	fields := strings.Fields(e)
	id, secret, ok := strings.Cut(fields[0], ":")
	if !ok || id == "" {
		return Key{}, false, &KeyError{Reason: "want id:secret"}
	}
	if !fuseschema.ValidKeyID(id) {
		return Key{}, false, &KeyError{KeyID: id, Reason: "key id must be 1 to 64 characters from [A-Za-z0-9._-]"}
	}
	raw, err := decodeSecret(secret)
	if err != "" {
		return Key{}, false, &KeyError{KeyID: id, Reason: err}
	}
	var notAfter time.Time
	isActive := false
	for _, f := range fields[1:] {
		switch {
		case f == "active":
			isActive = true
		case strings.HasPrefix(f, "not-after="):
			t, perr := time.Parse(time.RFC3339, strings.TrimPrefix(f, "not-after="))
			if perr != nil {
				return Key{}, false, &KeyError{KeyID: id, Reason: "not-after is not an RFC 3339 time: " + strconv.Quote(strings.TrimPrefix(f, "not-after="))}
			}
			notAfter = t
		default:
			return Key{}, false, &KeyError{KeyID: id, Reason: "unknown attribute " + strconv.Quote(f) + " (want not-after=RFC3339 or active)"}
		}
	}
	k, kerr := NewKey(id, raw, notAfter)
	if kerr != nil {
		return Key{}, false, kerr.(*KeyError)
	}
	return k, isActive, nil
}

// decodeSecret returns the secret's bytes or a reason that does not quote
// the secret.
func decodeSecret(s string) ([]byte, string) {
	switch {
	case strings.HasPrefix(s, "hex:"):
		b, err := hex.DecodeString(strings.TrimPrefix(s, "hex:"))
		if err != nil {
			return nil, "secret is not valid hex"
		}
		return b, ""
	case strings.HasPrefix(s, "base64:"):
		if b, ok := decodeBase64(strings.TrimPrefix(s, "base64:")); ok {
			return b, ""
		}
		return nil, "secret is not valid base64"
	case s == "":
		return nil, "secret is empty"
	}
	// A bare secret must be hex: a string of hex digits is also valid
	// base64 (of other bytes), and a typo in a hex secret ("zz") must not
	// silently become a base64 one. Base64 needs its prefix.
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, "secret is not hex (" + hexProblem(s) + "); write a base64 secret as base64:SECRET"
	}
	return b, ""
}

// hexProblem says what is wrong with a would-be hex string without
// quoting it.
func hexProblem(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "character " + strconv.Itoa(i+1) + " is not a hex digit"
		}
	}
	return "odd number of hex digits"
}

func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}
