package fusehttp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// A proxy in front of an OpenAI-compatible provider degrades the model
// fusebox's command names. The example runs its own broker and publishes
// one signed command the way fusebox does.
func ExampleNew() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, fuse.DefaultTopic))
	defer cluster.Close()
	secret := sha256.Sum256([]byte("example only: use 32 random bytes"))
	ring, _ := fuse.ParseKeyring("k1:" + hex.EncodeToString(secret[:]))

	signer, _ := fuse.NewSigner(ring)
	now := time.Now()
	cmd, _ := signer.Sign(fuseschema.FuseCommand{
		Target: fuseschema.Key{Tenant: "*", Service: "chat", Model: "big", Variant: "*"},
		Action: fuseschema.ActionDegrade, Level: 1, State: fuseschema.StateOpen, Version: 1, Fallback: "small",
		IssuedAtUnixNano: now.UnixNano(), ExpiresAtUnixNano: now.Add(15 * time.Minute).UnixNano(),
		Reasons: []fuseschema.Reason{{VerdictID: "7df3f31a542270fd0b8b05fa67947a57", Text: "tail breach"}},
	})
	value, _ := cmd.MarshalJSON()
	producer, _ := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	defer producer.Close()
	producer.ProduceSync(context.Background(), &kgo.Record{Topic: fuse.DefaultTopic, Key: []byte(cmd.Target.String()), Value: value})

	// The gateway: a fuse client, the middleware, a reverse proxy.
	client, _ := fuse.NewClient(fuse.WithBrokers(cluster.ListenAddrs()...), fuse.WithKeyring(ring))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go client.Run(ctx)
	client.WaitReady(ctx)

	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"object":"chat.completion","model":%q}`, req.Model)
	}))
	defer provider.Close()
	u, _ := url.Parse(provider.URL)
	var counts fusehttp.Counters
	mw, err := fusehttp.New(client, fusehttp.WithMetrics(&counts),
		fusehttp.WithDefaultKey(fuseschema.Key{Tenant: "acme", Service: "chat", Variant: "baseline"}))
	if err != nil {
		panic(err)
	}
	gateway := mw.Handler(httputil.NewSingleHostReverseProxy(u))

	w := httptest.NewRecorder()
	gateway.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions",
		strings.NewReader(`{"model":"big","messages":[{"role":"user","content":"hi"}]}`)))
	body, _ := io.ReadAll(w.Body)
	fmt.Println(w.Code, w.Header().Get("X-Fusebox-Decision"), string(body))
	fmt.Println("degraded:", counts.Get(fusehttp.LabelDegrade))
	// Output:
	// 200 degrade {"object":"chat.completion","model":"small"}
	// degraded: 1
}
