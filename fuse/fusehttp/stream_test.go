package fusehttp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// A streamed (SSE) response passes through the middleware and the proxy
// unbuffered: the client reads the first chunk while the upstream is still
// holding the rest back, waiting for the client to have read it.
func TestStreamingPassesThroughUnbuffered(t *testing.T) {
	e := newEnv(t)
	e.publish(t, e.command(bigAll, fuseschema.ActionDegrade, time.Hour)) // big → small
	firstRead := make(chan struct{})
	var finished, waitedOut atomic.Bool
	e.up.mu.Lock()
	e.up.stream = func(w http.ResponseWriter, r *http.Request) {
		defer finished.Store(true)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(i int) {
			fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"tok%d\"}}]}\n\n", i)
			fl.Flush()
		}
		chunk(0)
		select {
		case <-firstRead:
		case <-time.After(10 * time.Second):
			waitedOut.Store(true) // the client never saw chunk 0 while we waited: buffered
		}
		for i := 1; i < 5; i++ {
			chunk(i)
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	e.up.mu.Unlock()
	h, c := e.handler(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	body, _ := json.Marshal(map[string]any{"model": "big", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Fusebox-Tenant", "acme")
	req.Header.Set("X-Fusebox-Service", "chat")
	req.Header.Set("X-Fusebox-Variant", "baseline")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Fusebox-Decision") != "degrade" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d decision %q type %q", resp.StatusCode, resp.Header.Get("X-Fusebox-Decision"), resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		events = append(events, line)
		if len(events) == 1 {
			if finished.Load() || waitedOut.Load() {
				t.Fatalf("the first chunk arrived only after the upstream finished: the response was buffered")
			}
			close(firstRead)
		}
	}
	if len(events) != 6 || events[5] != "data: [DONE]" || !strings.Contains(events[4], "tok4") {
		t.Fatalf("events %q", events)
	}
	if waitedOut.Load() {
		t.Fatalf("the upstream waited out: the client did not read the first chunk while it streamed")
	}
	if s := e.up.last(t); s.Model != "small" || s.Body["stream"] != true {
		t.Fatalf("upstream got model %q stream %v", s.Model, s.Body["stream"])
	}
	if c.Get("degrade") != 1 {
		t.Fatalf("counters %v", c.Snapshot())
	}
}
