package proctest

import (
	"errors"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
)

// ConfigErrors returns every *processors.ConfigError in err's tree (joined
// or wrapped), in order.
func ConfigErrors(err error) []*processors.ConfigError {
	var out []*processors.ConfigError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *processors.ConfigError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return out
}

// WantConfigErrors fails unless err holds a *processors.ConfigError for
// each of wants: a field name ("window"), or a field and the start of its
// reason ("mix: unknown category colour").
func WantConfigErrors(t testing.TB, err error, wants ...string) {
	t.Helper()
	ces := ConfigErrors(err)
	if len(ces) == 0 {
		t.Fatalf("got %v, want ConfigErrors naming %q", err, wants)
	}
	for _, w := range wants {
		found := false
		for _, ce := range ces {
			s := ce.Error()
			found = found || s == w || strings.HasPrefix(s, w+":") || (strings.Contains(w, ":") && strings.HasPrefix(s, w))
		}
		if !found {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
}
