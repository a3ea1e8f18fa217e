package broker

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		mod      func(*Config)
		wantFlag string // "" for valid
	}{
		{"default", func(*Config) {}, ""},
		{"any port", func(c *Config) { c.Listen = "127.0.0.1:0" }, ""},
		{"all interfaces", func(c *Config) { c.Listen = "0.0.0.0:9092" }, ""},
		{"no port", func(c *Config) { c.Listen = "127.0.0.1" }, "--listen"},
		{"empty host", func(c *Config) { c.Listen = ":9092" }, "--listen"},
		{"bad port", func(c *Config) { c.Listen = "127.0.0.1:99999" }, "--listen"},
		{"sync without dir", func(c *Config) { c.SyncWrites = true }, "--sync-writes"},
		{"sync with dir", func(c *Config) { c.SyncWrites = true; c.DataDir = "/tmp/x" }, ""},
		{"zero partitions", func(c *Config) { c.Partitions = 0 }, "--partitions"},
		{"too many partitions", func(c *Config) { c.Partitions = MaxPartitions + 1 }, "--partitions"},
		{"bad topic name", func(c *Config) { c.Topics = []TopicSpec{{Name: "a/b", Partitions: 1}} }, "--topic"},
		{"dot topic", func(c *Config) { c.Topics = []TopicSpec{{Name: "..", Partitions: 1}} }, "--topic"},
		{"topic zero partitions", func(c *Config) { c.Topics = []TopicSpec{{Name: "a", Partitions: 0}} }, "--topic"},
		{"duplicate topic", func(c *Config) { c.Topics = []TopicSpec{{Name: "a", Partitions: 1}, {Name: "a", Partitions: 2}} }, "--topic"},
		{"bad mechanism", func(c *Config) { c.Users = []SASLUser{{Mechanism: "GSSAPI", User: "u", Password: "p"}} }, "--sasl-user"},
		{"empty password", func(c *Config) { c.Users = []SASLUser{{Mechanism: MechPlain, User: "u"}} }, "--sasl-user"},
		{"duplicate user", func(c *Config) {
			c.Users = []SASLUser{{Mechanism: MechPlain, User: "u", Password: "p"}, {Mechanism: MechPlain, User: "u", Password: "q"}}
		}, "--sasl-user"},
		{"same user two mechanisms", func(c *Config) {
			c.Users = []SASLUser{{Mechanism: MechPlain, User: "u", Password: "p"}, {Mechanism: MechScramSHA512, User: "u", Password: "p"}}
		}, ""},
		{"bad log level", func(c *Config) { c.LogLevel = "loud" }, "--log-level"},
		{"ACLs of a user", func(c *Config) {
			c.Users = []SASLUser{{Mechanism: MechPlain, User: "u", Password: "p"}}
			c.ACLs = map[string][]kfake.ACL{"u": nil}
		}, ""},
		{"ACLs of no user", func(c *Config) {
			c.Users = []SASLUser{{Mechanism: MechPlain, User: "u", Password: "p"}}
			c.ACLs = map[string][]kfake.ACL{"v": nil}
		}, "ACLs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.wantFlag == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Flag != tc.wantFlag {
				t.Fatalf("Validate = %v, want a ConfigError for %s", err, tc.wantFlag)
			}
			if !strings.Contains(err.Error(), tc.wantFlag) {
				t.Errorf("message %q does not name %s", err, tc.wantFlag)
			}
		})
	}
}

func TestParseTopicSpec(t *testing.T) {
	got, err := ParseTopicSpec("fusebox.fuse:6:cleanup.policy=compact,min.compaction.lag.ms=0")
	if err != nil {
		t.Fatal(err)
	}
	want := TopicSpec{Name: "fusebox.fuse", Partitions: 6, Configs: map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got, err := ParseTopicSpec("otlp_spans:12"); err != nil || got.Name != "otlp_spans" || got.Partitions != 12 || got.Configs != nil {
		t.Errorf("otlp_spans:12 = %+v, %v", got, err)
	}
	for _, bad := range []string{"nopartitions", "t:x", "t:0", "t:3:novalue", "t:3:=v", "bad name:3"} {
		if _, err := ParseTopicSpec(bad); err == nil || !strings.Contains(err.Error(), "--topic") {
			t.Errorf("%q: err = %v, want a --topic error", bad, err)
		}
	}
}

func TestParseSASLUser(t *testing.T) {
	got, err := ParseSASLUser("scram-sha-512:carol:p:a:s:s")
	if err != nil {
		t.Fatal(err)
	}
	if got != (SASLUser{Mechanism: MechScramSHA512, User: "carol", Password: "p:a:s:s"}) {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{"PLAIN:alice", "KERBEROS:u:p", "PLAIN::p", "PLAIN:u:"} {
		_, err := ParseSASLUser(bad)
		if err == nil || !strings.Contains(err.Error(), "--sasl-user") {
			t.Errorf("%q: err = %v, want a --sasl-user error", bad, err)
		}
	}
	// A malformed value is not echoed whole: it may carry a password.
	_, err = ParseSASLUser("secretpass")
	if err == nil {
		t.Fatal("no error")
	}
	if _, err := ParseSASLUser("PLAIN:secretuser"); strings.Contains(err.Error(), "secretuser") {
		t.Errorf("error echoes the value: %v", err)
	}
}
