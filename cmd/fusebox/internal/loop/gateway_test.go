package loop

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/schemas"
)

// probeAll makes every request a half-open probe of a degrade to small.
type probeAll struct{}

func (probeAll) Decide(k schemas.Key) fuse.Decision {
	return fuse.Decision{Matched: true, Probe: true, Fraction: 1, Outcome: fuse.Degrade, Fallback: Fallback,
		Command: schemas.FuseCommand{Target: k, Action: schemas.ActionDegrade, State: schemas.StateHalfOpen, Version: 1, Fallback: Fallback}}
}

// shadowGateway starts a shadowing gateway in front of a slow "big"
// (medianBig) and a fast fallback.
func shadowGateway(t *testing.T, medianBig time.Duration) *Gateway {
	t.Helper()
	start := time.Now()
	big := NewProvider("big", medianBig, 1, start, nil)
	small := NewProvider(Fallback, 2*time.Millisecond, 2, start, nil)
	t.Cleanup(big.Close)
	t.Cleanup(small.Close)
	var counters fusehttp.Counters
	mw, err := fusehttp.New(probeAll{}, fusehttp.WithMetrics(&counters))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(mw, &counters, map[string]string{"big": big.URL(), Fallback: small.URL()}, nil, "", 1, start, Fallback)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func post(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(TenantHeader, "acme")
	req.Header.Set("X-Fusebox-Service", "chat")
	req.Header.Set("X-Fusebox-Model", "big")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %q: %v", body, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSetModel: the body's model is replaced and the rest kept; a body
// that is absent, JSON null or not an object is an error, not a panic.
func TestSetModel(t *testing.T) {
	got, err := setModel([]byte(`{"model":"big","max_tokens":20}`), "small")
	var obj map[string]any
	if err != nil || json.Unmarshal(got, &obj) != nil || obj["model"] != "small" || obj["max_tokens"] != 20.0 {
		t.Fatalf("setModel = %s, %v", got, err)
	}
	for _, body := range []string{"", "null", " null ", "[1]", `"big"`, "{"} {
		if nb, err := setModel([]byte(body), "small"); err == nil {
			t.Errorf("setModel(%q) = %s, want an error", body, nb)
		}
	}
}

// TestGatewayProbeWithoutAnObjectBody: a probe whose model comes from the
// header and whose body is absent or JSON null is served as asked, by the
// model it names (whose provider refuses the body), and not copied; valid
// probes around it keep being shadowed (served by the fallback, a copy to
// big).
func TestGatewayProbeWithoutAnObjectBody(t *testing.T) {
	g := shadowGateway(t, 2*time.Millisecond)
	defer g.Close()
	valid := []byte(`{"model":"big","messages":[{"role":"user","content":"hi"}]}`)
	for i, body := range [][]byte{valid, nil, valid, []byte("null"), valid} {
		before := g.Shadows.Load()
		status, text := post(t, g.URL(), body)
		if body == nil || string(body) == "null" {
			if status != http.StatusNotFound || !strings.Contains(text, "this provider serves big") {
				t.Errorf("request %d (%q): %d %s, want big's own 404 (served as asked)", i, body, status, text)
			}
			if g.Shadows.Load() != before {
				t.Errorf("request %d (%q): copied to big although it was served by big", i, body)
			}
			continue
		}
		if status != http.StatusOK || !strings.Contains(text, `"model":"small"`) || g.Shadows.Load() != before+1 {
			t.Errorf("valid probe %d: %d %s, shadows %d→%d; want small's answer and one copy", i, status, text, before, g.Shadows.Load())
		}
	}
}

// TestGatewayCloseWaitsForProbeCopies: the probe copies to a slow model
// are still in flight when the users have their (fallback) answers; Close
// (and Drain) return only once every copy has come back and been recorded,
// so none outlives the gateway.
func TestGatewayCloseWaitsForProbeCopies(t *testing.T) {
	g := shadowGateway(t, 300*time.Millisecond)
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, text := post(t, g.URL(), []byte(`{"model":"big"}`)); status != http.StatusOK {
				t.Errorf("probe: %d %s", status, text)
			}
		}()
	}
	wg.Wait()
	inFlight := n - len(g.ProbeCalls())
	g.Close()
	if got := len(g.ProbeCalls()); got != n || g.Shadows.Load() != n {
		t.Fatalf("after Close: %d probe copies recorded of %d sent (%d were in flight when the users had their answers), want %d", got, g.Shadows.Load(), inFlight, n)
	}
	t.Logf("%d of %d copies were in flight when the users had their answers", inFlight, n)
}
