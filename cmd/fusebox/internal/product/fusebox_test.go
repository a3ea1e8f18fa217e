package product

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/config"
)

const testYAML = `version: t1
kafka: {brokers: [127.0.0.1:1]}
http: {listen: "127.0.0.1:0", ui: true}
slos:
  - name: latency-p999
    tail: {metric: duration_ms, p: 0.999, budget: 1000, window: 5m, every: 1m}
`

func testFile(t *testing.T) *config.File {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(testYAML))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestStartRefusesWithoutKeys: no keys and no leave to publish unsigned
// is ErrNoKeys, as a *StartError of PartSigning; an expired active key
// is refused too.
func TestStartRefusesWithoutKeys(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); err == nil {
		t.Error("a Config without File was accepted")
	}
	_, err := Start(context.Background(), Config{File: testFile(t)})
	var se *StartError
	if !errors.Is(err, ErrNoKeys) || !errors.As(err, &se) || se.Part != PartSigning {
		t.Errorf("no keys: %v, want ErrNoKeys of PartSigning", err)
	}
	k, err := fuse.NewKey("old", []byte("0123456789abcdef0123456789abcdef"), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := fuse.NewKeyring("", k)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Config{File: testFile(t), Keys: ring, KeysSource: "test"})
	if !errors.Is(err, errSigningKeyExpired) || !errors.As(err, &se) || se.Part != PartSigning {
		t.Errorf("expired key: %v, want errSigningKeyExpired of PartSigning", err)
	}
}

// TestStartServesBeforeOpen: after Start, /healthz answers, /readyz says
// the pipeline is starting and the live page is served; Signing says
// unsigned when allowed.
func TestStartServesBeforeOpen(t *testing.T) {
	fb, err := Start(context.Background(), Config{File: testFile(t), Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if fb.Signing() != "unsigned" || fb.Page() == nil || fb.Addr() == "" {
		t.Fatalf("signing %q, page %v, addr %q", fb.Signing(), fb.Page(), fb.Addr())
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/ui/": 200} {
		resp, err := http.Get("http://" + fb.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
		if path == "/readyz" && !strings.Contains(string(body), errStarting.Error()) {
			t.Errorf("/readyz says %q, want %q", body, errStarting)
		}
	}
	if err := fb.Run(context.Background()); err == nil {
		t.Error("Run before Open returned nil")
	}
}
