package fusehttp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

type noCommands struct{}

func (noCommands) Decide(fuseschema.Key) fuse.Decision { return fuse.Decision{} }

// An empty chunked POST (ContentLength -1, no data) reaches the handler
// behind with a readable empty body: readBody read and closed the
// original, and a handler reading the closed one (ReverseProxy) fails.
func TestEmptyChunkedBodyStaysReadable(t *testing.T) {
	mw, err := New(noCommands{})
	if err != nil {
		t.Fatal(err)
	}
	var readErr error
	var got []byte
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, readErr = io.ReadAll(r.Body)
	}))
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", &closingReader{})
	r.ContentLength = -1
	r.Header.Set("X-Fusebox-Tenant", "acme")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if readErr != nil || len(got) != 0 {
		t.Fatalf("the handler read %q, %v: want an empty body and no error", got, readErr)
	}
}

// closingReader is an empty body that refuses reads once closed, as
// net/http's server body does.
type closingReader struct{ closed bool }

func (c *closingReader) Read([]byte) (int, error) {
	if c.closed {
		return 0, errClosedBody
	}
	return 0, io.EOF
}

func (c *closingReader) Close() error { c.closed = true; return nil }

var errClosedBody = errors.New("http: invalid Read on closed Body")

// Counters has a slot per Label: adding a Label without growing the
// array would panic on the request path.
func TestCountersHoldEveryLabel(t *testing.T) {
	var c Counters
	if len(c.n) != len(Labels) {
		t.Fatalf("Counters holds %d labels, Labels has %d", len(c.n), len(Labels))
	}
}

// A host that wraps the body in http.MaxBytesReader under the
// middleware's own limit gets 413 when its limit is passed, not 400.
func TestHostMaxBytesReaderIs413(t *testing.T) {
	mw, err := New(noCommands{})
	if err != nil {
		t.Fatal(err)
	}
	h := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler behind was called") }))
	host := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 8)
		h.ServeHTTP(w, r)
	})
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o"}`))
	r.ContentLength = -1
	rec := httptest.NewRecorder()
	host.ServeHTTP(rec, r)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %s", rec.Code, rec.Body)
	}
}
