package testharness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// EnvKafkaLibs names a directory holding the Apache Kafka broker's jars
// instead of the cache the harness fills with Maven.
const EnvKafkaLibs = "FUSEBOX_KAFKA_LIBS"

// kafkaPom is the pom, relative to the module root, whose one dependency is
// the broker (org.apache.kafka:kafka_2.13); its <kafka.version> is the
// version the harness runs.
const kafkaPom = "testing/kafka/pom.xml"

// jarsComplete marks a cache directory Maven filled completely.
const jarsComplete = ".complete"

// mvnTimeout bounds the one Maven run that fills the cache (a cold fetch
// takes seconds from a near mirror).
const mvnTimeout = 10 * time.Minute

var kafkaVersionRE = regexp.MustCompile(`<kafka\.version>([^<]+)</kafka\.version>`)

// errNoApache is wrapped by the reasons Apache Kafka cannot run here (no
// java, no mvn and no jars); the test skips on it unless
// FUSEBOX_REQUIRE_APACHE_KAFKA is true.
var errNoApache = errors.New("apache kafka unavailable")

// moduleRoot walks up from the working directory (a package directory
// while tests run) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// kafkaVersion reads <kafka.version> from the pom.
func kafkaVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, kafkaPom))
	if err != nil {
		return "", err
	}
	m := kafkaVersionRE.FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s has no <kafka.version>", kafkaPom)
	}
	return strings.TrimSpace(string(m[1])), nil
}

// findJava returns $JAVA_HOME/bin/java, else java from PATH.
func findJava() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", "java")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: no java on PATH (Apache Kafka 4 needs Java 17+; apt-get install openjdk-17-jre-headless)", errNoApache)
	}
	return p, nil
}

// kafkaJars returns the directory of the broker's jars and its version,
// filling <module>/.cache/kafka-VERSION/libs with Maven on first use. Test
// binaries run in parallel, so the fill is serialised by an flock on a file
// beside the cache and lands by rename: a reader sees no half-filled cache.
func kafkaJars() (dir, version string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	version, err = kafkaVersion(root)
	if err != nil {
		return "", "", err
	}
	if d := os.Getenv(EnvKafkaLibs); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", "", fmt.Errorf("%s=%s: %w", EnvKafkaLibs, d, err)
		}
		return d, version, nil
	}
	base := filepath.Join(root, ".cache", "kafka-"+version)
	dir = filepath.Join(base, "libs")
	if _, err := os.Stat(filepath.Join(dir, jarsComplete)); err == nil {
		return dir, version, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", "", fmt.Errorf("%w: the jars of Apache Kafka %s are not in %s and there is no mvn on PATH to fetch them (apt-get install maven)", errNoApache, version, dir)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", "", err
	}
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(dir, jarsComplete)); err == nil {
		return dir, version, nil // another test binary filled it meanwhile
	}
	tmp, err := os.MkdirTemp(base, "libs-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(root, kafkaPom),
		"dependency:copy-dependencies", "-DoutputDirectory="+tmp)
	cmd.Dir = root
	timer := time.AfterFunc(mvnTimeout, func() { _ = cmd.Process.Kill() })
	out, err := cmd.CombinedOutput()
	timer.Stop()
	if err != nil {
		return "", "", fmt.Errorf("mvn dependency:copy-dependencies for Apache Kafka %s: %w\n%s", version, err, tailLines(string(out), logTailLines))
	}
	if err := os.WriteFile(filepath.Join(tmp, jarsComplete), []byte(version+"\n"), 0o644); err != nil {
		return "", "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", "", err
	}
	return dir, version, nil
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
