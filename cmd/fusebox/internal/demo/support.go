package demo

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/pipeline"
)

// caughtUp reports whether the pipeline has processed everything up to
// eventEnd (the keyed partitions' watermarks passed it, less the allowed
// lateness that holds them back) and the fuse client has read (applied or
// rejected) as many commands as the engine emitted.
func caughtUp(p *pipeline.Pipeline, st *state, fc *fuse.Client, eventEnd time.Time, lateness time.Duration) bool {
	parts := p.Keyed().Partitions()
	if len(parts) == 0 {
		return false
	}
	want := eventEnd.Add(-lateness - time.Second).UnixNano()
	for _, wm := range parts {
		if wm < want {
			return false
		}
	}
	_, emitted, _ := st.counts()
	return int64(fc.Stats().Records) >= emitted
}

// waitRead waits up to d for the fuse client to read every command
// emitted.
func waitRead(st *state, fc *fuse.Client, d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if _, emitted, _ := st.counts(); int64(fc.Stats().Records) >= emitted {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func summary(w io.Writer, r *Result, start time.Time) {
	how := "stopped before the end of the scenario"
	if r.Finished {
		how = "scenario finished"
	}
	fmt.Fprintf(w, "fusebox demo: %s after %v: %d verdicts, %d fuse commands (%d verified and applied by the fuse client)\n",
		how, r.Wall.Round(time.Millisecond), r.Verdicts, r.Commands, r.Applied)
	incs := Incidents()
	for i, inc := range incs {
		switch {
		case r.Outcome.Closed[i] > 0:
			fmt.Fprintf(w, "  %-18s %-34s %s: tripped after %v, recovered after %v (wall)\n", inc.Name, inc.Target.String(),
				inc.Action, r.Outcome.Tripped[i].Round(time.Millisecond), r.Outcome.Closed[i].Round(time.Millisecond))
		case r.Outcome.Tripped[i] > 0:
			fmt.Fprintf(w, "  %-18s %-34s %s: tripped after %v, not yet recovered\n", inc.Name, inc.Target.String(),
				inc.Action, r.Outcome.Tripped[i].Round(time.Millisecond))
		default:
			fmt.Fprintf(w, "  %-18s %-34s %s: not tripped (yet)\n", inc.Name, inc.Target.String(), inc.Action)
		}
	}
	if r.Outcome.AllDone > 0 {
		fmt.Fprintf(w, "fusebox demo: every incident tripped and recovered within %v of wall time\n", r.Outcome.AllDone.Round(time.Millisecond))
	}
	for _, c := range r.Outcome.Elsewhere {
		fmt.Fprintf(w, "fusebox demo: unexpected trip outside the incidents: %s\n", CommandLine(&c, start))
	}
	fmt.Fprintf(w, "fusebox demo: verdicts and commands are in %s (one JSON object per line)\n", r.JSONL)
}

// defaultJSONL names the output file: in the current directory when it is
// writable, else in the temporary directory.
func defaultJSONL(now time.Time) string {
	name := "fusebox-demo-" + now.Format("20060102-150405") + ".jsonl"
	if f, err := os.CreateTemp(".", ".fusebox-demo-probe-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
		if abs, err := filepath.Abs(name); err == nil {
			return abs
		}
		return name
	}
	return filepath.Join(os.TempDir(), name)
}

// randomKeyring makes a throwaway signing key: the demo signs its fuse
// commands for real, and its fuse client verifies them.
func randomKeyring() (*fuse.Keyring, error) {
	secret := make([]byte, 32)
	id := make([]byte, 3)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	k, err := fuse.NewKey("demo-"+hex.EncodeToString(id), secret, time.Time{})
	if err != nil {
		return nil, err
	}
	return fuse.NewKeyring("", k)
}

// startError words an error of product.Start for the demo's user: an
// HTTP address error names --http.
func startError(err error) error {
	var se *product.StartError
	switch {
	case errors.As(err, &se) && se.Part == product.PartHTTP:
		return fmt.Errorf("demo: http (--http): %w", se.Err)
	case errors.As(err, &se):
		return se.Err
	}
	return err
}

// slogWriter turns the broker's log lines into log records.
type slogWriter struct{ l *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		w.l.Warn(s)
	}
	return len(p), nil
}
