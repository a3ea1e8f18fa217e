package fusehttp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
)

// env is a kfake broker with the fuse topic, a real fuse.Client following
// it with key k1, and an upstream that records what reached it.
type env struct {
	k    *fusetest.Kafka
	gw   *fusetest.Gateway
	up   *upstream
	next uint64 // the next command version
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvClock(t, time.Now)
}

// newEnvClock is newEnv with the fuse client judging expiry by clock.
func newEnvClock(t *testing.T, clock func() time.Time) *env {
	t.Helper()
	k := fusetest.Setup(t)
	key, err := fuse.NewKey("k1", fusetest.Secret("k1"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := fuse.NewKeyring("", key)
	if err != nil {
		t.Fatal(err)
	}
	gw := fusetest.Start(t, fuse.NewKgoSource(fusetest.Topic, kgo.SeedBrokers(k.Brokers...)), fuse.WithKeyring(ring), fuse.WithClock(clock))
	return &env{k: k, gw: gw, up: newUpstream(t), next: 1}
}

// publish signs cmd with k1, publishes it as fusebox does, and waits until
// the client applied it.
func (e *env) publish(t *testing.T, cmd fuseschema.FuseCommand) fuseschema.FuseCommand {
	t.Helper()
	cmd = fusetest.Sign(cmd, "k1")
	before := e.gw.Stats().Applied
	e.k.Produce(t, fusetest.Record(t, cmd))
	fusetest.Eventually(t, "the command applied", func() bool { return e.gw.Stats().Applied > before })
	return cmd
}

// command builds a command for target issued now with ttl.
func (e *env) command(target fuseschema.Key, action fuseschema.Action, ttl time.Duration) fuseschema.FuseCommand {
	c := fusetest.Cmd(target, e.next, action, time.Now(), ttl)
	e.next++
	return c
}

// handler is the middleware with opts in front of a reverse proxy to the
// upstream, flushing as the upstream writes.
func (e *env) handler(t *testing.T, opts ...fusehttp.Option) (http.Handler, *fusehttp.Counters) {
	t.Helper()
	var c fusehttp.Counters
	m, err := fusehttp.New(e.gw.Client, append([]fusehttp.Option{fusehttp.WithMetrics(&c)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	u, _ := url.Parse(e.up.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	return m.Handler(proxy), &c
}

// seen is one request as the upstream received it.
type seen struct {
	Path          string
	Model         string
	Body          map[string]any
	ContentLength int64
	BodyLen       int
	Header        http.Header
}

type upstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
	// stream, when set, serves streamed requests (body "stream": true).
	stream func(w http.ResponseWriter, r *http.Request)
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := seen{Path: r.URL.Path, ContentLength: r.ContentLength, BodyLen: len(b), Header: r.Header.Clone()}
		_ = json.Unmarshal(b, &s.Body)
		s.Model, _ = s.Body["model"].(string)
		u.mu.Lock()
		u.got = append(u.got, s)
		stream := u.stream
		u.mu.Unlock()
		if st, _ := s.Body["stream"].(bool); st && stream != nil {
			stream(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "model": s.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}}}})
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.got...)
}

func (u *upstream) last(t *testing.T) seen {
	t.Helper()
	r := u.requests()
	if len(r) == 0 {
		t.Fatal("the upstream got no request")
	}
	return r[len(r)-1]
}

// chat is a chat-completions request for model with the key headers.
func chat(model string, key fuseschema.Key, extra map[string]any) *http.Request {
	body := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "héllo \u2603"}}, "temperature": 0.25}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(b))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Fusebox-Tenant", key.Tenant)
	r.Header.Set("X-Fusebox-Service", key.Service)
	r.Header.Set("X-Fusebox-Variant", key.Variant)
	return r
}

func do(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// openAIError decodes an OpenAI-style error body.
func openAIError(t *testing.T, w *httptest.ResponseRecorder) (msg, typ, code string) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	var b struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil || b.Error == nil {
		t.Fatalf("error body %q: %v", w.Body.String(), err)
	}
	return b.Error.Message, b.Error.Type, b.Error.Code
}
