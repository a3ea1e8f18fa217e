package deploy

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/gen"
)

// root is the repository root, where docker-compose.yml lives.
const root = ".."

// compose is the part of the Compose file format the checks read.
type compose struct {
	Name     string             `yaml:"name"`
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image       string            `yaml:"image"`
	Build       *build            `yaml:"build"`
	Hostname    string            `yaml:"hostname"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

type build struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// collectorConfig is the part of the Collector's config the checks read.
type collectorConfig struct {
	Receivers map[string]struct {
		Protocols map[string]struct {
			Endpoint string `yaml:"endpoint"`
		} `yaml:"protocols"`
	} `yaml:"receivers"`
	Exporters map[string]struct {
		Brokers         []string `yaml:"brokers"`
		ProtocolVersion string   `yaml:"protocol_version"`
		Traces          struct {
			Topic    string `yaml:"topic"`
			Encoding string `yaml:"encoding"`
		} `yaml:"traces"`
	} `yaml:"exporters"`
	Service struct {
		Pipelines map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
	Processors map[string]any `yaml:"processors"`
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(false)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// hostPath maps a path inside a service's container to the host file
// mounted there (a bind mount "./host:/container[:ro]"), or "".
func (s service) hostPath(container string) string {
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == container && strings.HasPrefix(parts[0], ".") {
			return filepath.Join(root, parts[0])
		}
	}
	return ""
}

// flag returns the value of --name in the service's command, or "".
func (s service) flag(name string) string {
	for i, a := range s.Command {
		if a == "--"+name && i+1 < len(s.Command) {
			return s.Command[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// publishes reports whether the service publishes container port p on the
// same host port.
func (s service) publishes(p string) bool {
	for _, m := range s.Ports {
		if m == p+":"+p || strings.HasSuffix(m, ":"+p+":"+p) {
			return true
		}
	}
	return false
}

func port(t *testing.T, hostport string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%q: %v", hostport, err)
	}
	return p
}

// imageTag returns the tag of an image reference "repo:tag".
func imageTag(image string) string {
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[i+1:]
	}
	return ""
}

// listeners parses "NAME://host:port,..." into name → host:port.
func listeners(v string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(l), "://")
		if ok {
			out[name] = addr
		}
	}
	return out
}

func TestComposeServices(t *testing.T) {
	c := loadCompose(t)
	want := map[string]string{
		"kafka":          "apache/kafka",
		"clickhouse":     "clickhouse/clickhouse-server",
		"fusebox":        "fusebox",
		"gen":            "fusebox",
		"otel-collector": "otel/opentelemetry-collector-contrib",
		"grafana":        "grafana/grafana",
		"prometheus":     "prom/prometheus",
	}
	for name, repo := range want {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("service %s missing", name)
			continue
		}
		if !strings.HasPrefix(s.Image, repo+":") {
			t.Errorf("service %s: image %q, want %s:TAG", name, s.Image, repo)
		}
		if tag := imageTag(s.Image); tag == "" || tag == "latest" {
			t.Errorf("service %s: image %q is not pinned to a version", name, s.Image)
		}
		for dep, d := range s.DependsOn {
			ds, ok := c.Services[dep]
			if !ok {
				t.Errorf("service %s depends on unknown service %s", name, dep)
			}
			if d.Condition == "service_healthy" && (ds.Healthcheck == nil || len(ds.Healthcheck.Test) == 0) {
				t.Errorf("service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				if _, err := os.Stat(filepath.Join(root, src)); err != nil {
					t.Errorf("service %s mounts %s: %v", name, src, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("service %s mounts named volume %s, not declared under volumes", name, src)
			}
		}
		if s.Build != nil {
			dir := filepath.Join(root, s.Build.Context)
			df := s.Build.Dockerfile
			if df == "" {
				df = "Dockerfile"
			}
			if _, err := os.Stat(filepath.Join(dir, df)); err != nil {
				t.Errorf("service %s builds from %s: %v", name, filepath.Join(s.Build.Context, df), err)
			}
		}
	}
	for name := range c.Services {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected service %s: add its checks here", name)
		}
	}
	for _, name := range []string{"fusebox", "gen"} {
		if c.Services[name].Build == nil {
			t.Errorf("service %s does not build fusebox from the Dockerfile", name)
		}
	}
	if cmd := c.Services["fusebox"].Command; len(cmd) == 0 || cmd[0] != "run" {
		t.Errorf("service fusebox runs %v, want `fusebox run --config ...`", cmd)
	}
	if cmd := c.Services["gen"].Command; len(cmd) == 0 || cmd[0] != "gen" {
		t.Errorf("service gen runs %v, want `fusebox gen ...`", cmd)
	}
	for _, dep := range []string{"kafka", "clickhouse"} {
		if c.Services["fusebox"].DependsOn[dep].Condition != "service_healthy" {
			t.Errorf("service fusebox does not wait for %s to be healthy", dep)
		}
	}
}

func TestDockerfileBuildsAStaticFusebox(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(froms))
	}
	if !strings.HasPrefix(froms[0][1], "golang:") {
		t.Errorf("build stage from %s, want a golang image", froms[0][1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/fusebox", "COPY --from=build", "ENTRYPOINT"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// The Go version of the build image is the module's.
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(mod))
	if goVer == nil || !strings.HasPrefix(strings.TrimPrefix(froms[0][1], "golang:"), goVer[1]) {
		t.Errorf("build image %s does not match go.mod's go %v", froms[0][1], goVer)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "fusebox", "main.go")); err != nil {
		t.Errorf("the Dockerfile builds ./cmd/fusebox: %v", err)
	}
}

// fuseboxConfig loads the config the fusebox service runs with.
func fuseboxConfig(t *testing.T, c compose) *config.File {
	t.Helper()
	s := c.Services["fusebox"]
	in := s.flag("config")
	if in == "" {
		t.Fatalf("service fusebox runs %v without --config", s.Command)
	}
	host := s.hostPath(in)
	if host == "" {
		t.Fatalf("service fusebox reads %s, which no bind mount provides (volumes %v)", in, s.Volumes)
	}
	f, err := config.Load(host)
	if err != nil {
		t.Fatalf("%s does not load: %v", host, err)
	}
	return f
}

func TestFuseboxConfigAgreesWithCompose(t *testing.T) {
	c := loadCompose(t)
	f := fuseboxConfig(t, c)
	// The processors accept their sections, as `fusebox run` builds them.
	if _, err := config.WorkerConfig(f); err != nil {
		t.Errorf("deploy/fusebox.yaml: %v", err)
	}
	def := config.Default()

	// Kafka: every broker the config names is the kafka service's
	// in-network advertised listener; the host listener is fusebox's
	// default address, published on the host.
	kafka := c.Services["kafka"]
	adv := listeners(kafka.Environment["KAFKA_ADVERTISED_LISTENERS"])
	bound := listeners(kafka.Environment["KAFKA_LISTENERS"])
	inNetwork := map[string]bool{}
	for name, addr := range adv {
		host, _, _ := net.SplitHostPort(addr)
		if host == "kafka" || host == kafka.Hostname {
			inNetwork[addr] = true
		}
		if _, ok := bound[name]; !ok {
			t.Errorf("kafka advertises listener %s that KAFKA_LISTENERS does not bind", name)
		} else if port(t, bound[name]) != port(t, addr) {
			t.Errorf("kafka listener %s binds %s but advertises %s", name, bound[name], addr)
		}
	}
	for _, b := range f.Kafka.Brokers {
		if !inNetwork[b] {
			t.Errorf("config kafka.brokers %s is not an in-network advertised listener of the kafka service %v", b, adv)
		}
	}
	defPort := port(t, def.Kafka.Brokers[0])
	hostListener := false
	for _, addr := range adv {
		h, p, _ := net.SplitHostPort(addr)
		if (h == "localhost" || h == "127.0.0.1") && p == defPort && kafka.publishes(p) {
			hostListener = true
		}
	}
	if !hostListener {
		t.Errorf("kafka does not advertise and publish localhost:%s, fusebox's default broker %s", defPort, def.Kafka.Brokers[0])
	}
	if kafka.Environment["KAFKA_PROCESS_ROLES"] != "broker,controller" {
		t.Errorf("kafka is not a single KRaft node (process roles %q)", kafka.Environment["KAFKA_PROCESS_ROLES"])
	}

	// ClickHouse: the config's address is the clickhouse service's native
	// port, its database and user are the ones the image creates, and the
	// password env var holds that user's password.
	ch := c.Services["clickhouse"]
	if len(f.Sinks.ClickHouse.Addr) != 1 || f.Sinks.ClickHouse.Addr[0] != "clickhouse:9000" {
		t.Errorf("config sinks.clickhouse.addr %v, want [clickhouse:9000], the service's native port", f.Sinks.ClickHouse.Addr)
	}
	if !ch.publishes("9000") {
		t.Errorf("clickhouse does not publish the native port 9000 (ports %v)", ch.Ports)
	}
	if f.Sinks.ClickHouse.Database != ch.Environment["CLICKHOUSE_DB"] || f.Sinks.ClickHouse.Database != def.Sinks.ClickHouse.Database {
		t.Errorf("config database %q, CLICKHOUSE_DB %q, fusebox's default %q: want all equal",
			f.Sinks.ClickHouse.Database, ch.Environment["CLICKHOUSE_DB"], def.Sinks.ClickHouse.Database)
	}
	if f.Sinks.ClickHouse.Username != ch.Environment["CLICKHOUSE_USER"] {
		t.Errorf("config username %q, CLICKHOUSE_USER %q", f.Sinks.ClickHouse.Username, ch.Environment["CLICKHOUSE_USER"])
	}
	fb := c.Services["fusebox"]
	if env := f.Sinks.ClickHouse.PasswordEnv; env == "" || fb.Environment[env] != ch.Environment["CLICKHOUSE_PASSWORD"] {
		t.Errorf("config password_env %q: the fusebox service must set it to CLICKHOUSE_PASSWORD", env)
	}

	// Topics and encodings are fusebox's defaults, which `fusebox gen`
	// writes too.
	if !slices.Equal(f.Topics.Spans, def.Topics.Spans) || !slices.Equal(f.Topics.Corrections, def.Topics.Corrections) {
		t.Errorf("config topics %v / %v, want fusebox's defaults %v / %v", f.Topics.Spans, f.Topics.Corrections, def.Topics.Spans, def.Topics.Corrections)
	}

	// HTTP: listening on all interfaces in the container, on the default
	// port, published.
	if h, p, _ := net.SplitHostPort(f.HTTP.Listen); h != "0.0.0.0" || p != port(t, def.HTTP.Listen) || !fb.publishes(p) {
		t.Errorf("config http.listen %s: want 0.0.0.0 on the default port %s, published by the fusebox service", f.HTTP.Listen, port(t, def.HTTP.Listen))
	}

	// Signing: the keys env var is set and parses.
	keysEnv := f.Signing.KeysEnv
	if keysEnv == "" || f.Signing.InsecureUnsigned {
		t.Errorf("config signing: keys_env %q, insecure_unsigned %v: want signed commands", keysEnv, f.Signing.InsecureUnsigned)
	} else if _, err := fuse.ParseKeyring(fb.Environment[keysEnv]); err != nil {
		t.Errorf("fusebox service %s: %v", keysEnv, err)
	}
}

func TestGenServiceAgreesWithConfig(t *testing.T) {
	c := loadCompose(t)
	f := fuseboxConfig(t, c)
	s := c.Services["gen"]
	if b := s.flag("brokers"); !slices.Contains(f.Kafka.Brokers, b) {
		t.Errorf("gen --brokers %q, want one of the config's %v", b, f.Kafka.Brokers)
	}
	def := gen.DefaultConfig()
	orDefault := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	if topic := orDefault(s.flag("spans-topic"), def.SpansTopic); !slices.Contains(f.Topics.Spans, topic) {
		t.Errorf("gen writes spans to %s, the config reads %v", topic, f.Topics.Spans)
	}
	if topic := orDefault(s.flag("corrections-topic"), def.CorrectionsTopic); !slices.Contains(f.Topics.Corrections, topic) {
		t.Errorf("gen writes corrections to %s, the config reads %v", topic, f.Topics.Corrections)
	}
	if enc := orDefault(s.flag("encoding"), def.Encoding); f.Topics.SpanEncoding != "auto" && f.Topics.SpanEncoding != enc {
		t.Errorf("gen writes %s, the config reads span_encoding %s", enc, f.Topics.SpanEncoding)
	}
	if s.DependsOn["kafka"].Condition != "service_healthy" {
		t.Error("service gen does not wait for kafka to be healthy")
	}
}

func TestCollectorExportsWhereFuseboxReads(t *testing.T) {
	c := loadCompose(t)
	f := fuseboxConfig(t, c)
	s := c.Services["otel-collector"]
	in := s.flag("config")
	host := s.hostPath(in)
	if in == "" || host == "" {
		t.Fatalf("otel-collector runs %v: its --config must be a bind-mounted file (volumes %v)", s.Command, s.Volumes)
	}
	if filepath.Base(host) != "otel-collector.yaml" {
		t.Errorf("otel-collector reads %s, want deploy/otel-collector.yaml", host)
	}
	b, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	var cc collectorConfig
	if err := yaml.Unmarshal(b, &cc); err != nil {
		t.Fatalf("%s: %v", host, err)
	}

	var kafkaExp []string
	for name := range cc.Exporters {
		if name == "kafka" || strings.HasPrefix(name, "kafka/") {
			kafkaExp = append(kafkaExp, name)
		}
	}
	if len(kafkaExp) != 1 {
		t.Fatalf("collector exporters %v: want exactly one kafka exporter", kafkaExp)
	}
	name := kafkaExp[0]
	exp := cc.Exporters[name]
	if !slices.Equal(exp.Brokers, f.Kafka.Brokers) {
		t.Errorf("exporter %s brokers %v, fusebox reads %v", name, exp.Brokers, f.Kafka.Brokers)
	}
	if want := imageTag(c.Services["kafka"].Image); exp.ProtocolVersion != want {
		t.Errorf("exporter %s protocol_version %q, want the kafka image's version %q", name, exp.ProtocolVersion, want)
	}
	if !slices.Contains(f.Topics.Spans, exp.Traces.Topic) {
		t.Errorf("exporter %s writes topic %q, fusebox reads %v", name, exp.Traces.Topic, f.Topics.Spans)
	}
	if enc := exp.Traces.Encoding; (enc != "otlp_proto" && enc != "otlp_json") || (f.Topics.SpanEncoding != "auto" && f.Topics.SpanEncoding != enc) {
		t.Errorf("exporter %s encoding %q, fusebox reads span_encoding %q", name, enc, f.Topics.SpanEncoding)
	}

	traces, ok := cc.Service.Pipelines["traces"]
	if !ok || !slices.Contains(traces.Exporters, name) || !slices.Contains(traces.Receivers, "otlp") {
		t.Errorf("collector traces pipeline %+v: want receiver otlp and exporter %s", traces, name)
	}
	for _, p := range traces.Processors {
		if _, ok := cc.Processors[p]; !ok {
			t.Errorf("traces pipeline uses processor %s, which is not configured", p)
		}
	}
	for proto, wantPort := range map[string]string{"grpc": "4317", "http": "4318"} {
		ep := cc.Receivers["otlp"].Protocols[proto].Endpoint
		if h, p, err := net.SplitHostPort(ep); err != nil || h != "0.0.0.0" || p != wantPort {
			t.Errorf("otlp receiver %s endpoint %q, want 0.0.0.0:%s", proto, ep, wantPort)
		}
		if !s.publishes(wantPort) {
			t.Errorf("otel-collector does not publish OTLP/%s port %s", proto, wantPort)
		}
	}
}
