package openslo

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/config"
	"go.yaml.in/yaml/v3"
)

// TestExportNamesRFC1123: fusebox names that are no RFC 1123 label
// (uppercase and '_', 70 characters, and the names derived from them:
// <slo>-page-1 ...) export as lowercase labels of 63 characters at most,
// unique per kind (Chat_P99 and chat-p99 do not clash), with the fusebox
// name in fusebox.dev/name; import restores the names, every field the
// same, and a second export gives the same bytes.
func TestExportNamesRFC1123(t *testing.T) {
	long := strings.Repeat("Availability_", 5) + "chat1" // 70 characters
	if len(long) != 70 {
		t.Fatalf("len %d", len(long))
	}
	src := "slos:\n" +
		"  - name: Chat_P99\n    tail: {metric: ttft_ms, budget: 1500, p: 0.99}\n" +
		"  - name: chat-p99\n    tail: {metric: ttft_ms, budget: 2000, p: 0.99}\n" +
		"  - name: " + long + "\n    burnrate: {target: 0.999}\n" +
		"  - name: " + strings.Repeat("availability-", 4) + "chat-api\n    burnrate: {target: 0.99}\n" // a label of 60: its policies' names are not
	f, err := config.Parse("names.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g, out := roundTrip(t, "names", f)
	if a, b := canonical(t, f), canonical(t, g); a != b {
		t.Errorf("the SLOs changed in the round trip:\n was %s\n now %s", a, b)
	}
	seen := map[string]bool{}
	annotated := map[string]bool{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d document
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n := d.Metadata.Name
		if !rfc1123(n) || len(n) > 63 || strings.ToLower(n) != n {
			t.Errorf("%s %q is no RFC 1123 label", d.Kind, n)
		}
		if seen[d.Kind+"/"+n] {
			t.Errorf("two %s named %q", d.Kind, n)
		}
		seen[d.Kind+"/"+n] = true
		if v, ok := d.Metadata.Annotations[Prefix+annName]; ok {
			annotated[v] = true
		}
	}
	for _, n := range []string{"Chat_P99", long} {
		if !annotated[n] {
			t.Errorf("no %s%s: %q annotation:\n%s", Prefix, annName, n, out)
		}
	}
	if len(annotated) != 2 {
		t.Errorf("annotated %v, want the two names that are no label", annotated)
	}
	// docs/openslo.md gives this hashed name.
	if !seen["SLO/chat-p99"] || !seen["SLO/chat-p99-19267565"] {
		t.Errorf("Chat_P99 and chat-p99: want chat-p99 and chat-p99-19267565:\n%s", out)
	}
	if n := strings.Count(string(out), "kind: AlertPolicy\n"); n != 8 {
		t.Errorf("%d alert policies, want 8", n)
	}
	again, err := Export(g)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, again) {
		t.Errorf("the second export differs")
	}
}

// TestImportNameAnnotationEdited: a fusebox.dev/name that does not go
// with the SLO's metadata.name (renamed after the export) is refused.
func TestImportNameAnnotationEdited(t *testing.T) {
	data := strings.Replace(latencyDoc, "  name: lat\n", "  name: latency\n  annotations:\n    fusebox.dev/name: Lat_P99\n", 1)
	res, err := Importer{}.Import([]Input{{Name: "f.yaml", Data: []byte(data)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `f.yaml:6: document 1 (SLO latency): metadata.annotations["fusebox.dev/name"]: the fusebox name "Lat_P99" goes with metadata.name "lat-p99" (or "lat-p99-`
	if !strings.Contains(res.Problems.Refused().Error(), want) {
		t.Errorf("problems:\n%s\nwant %q", res.Problems.Error(), want)
	}
	data = strings.Replace(latencyDoc, "  name: lat\n", "  name: lat-p99\n  annotations:\n    fusebox.dev/name: Lat_P99\n", 1)
	if res, _ = (Importer{}).Import([]Input{{Name: "f.yaml", Data: []byte(data)}}); len(res.Problems) > 0 || !strings.Contains(string(res.File), "name: Lat_P99\n") {
		t.Errorf("the slug with its name: %s\n%s", res.Problems.Error(), res.File)
	}
}
