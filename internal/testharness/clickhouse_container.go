package testharness

import (
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// The container path is used only where no clickhouse-server binary is
// installed and a Docker engine answers. No Docker engine runs on the
// project's build machines, so this path is compiled and kept small but is
// not exercised by the project's own CI.
const (
	// clickHouseImage is a current ClickHouse LTS release.
	clickHouseImage = "clickhouse/clickhouse-server:26.9"
	// containerUser/containerPassword: current images refuse network logins
	// for a passwordless default user, so the harness creates its own.
	containerUser     = "fusebox"
	containerPassword = "fusebox"
	// dockerProbeTimeout bounds the "does a Docker engine answer" check.
	dockerProbeTimeout = 5 * time.Second
	// containerStartTimeout covers an image pull on a slow link.
	containerStartTimeout = 5 * time.Minute
)

// dockerAnswers returns nil when a Docker engine answers an Info request.
// testcontainers-go can panic when no engine is configured at all; that is
// reported as an error too.
func dockerAnswers() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("testcontainers: %v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerProbeTimeout)
	defer cancel()
	return p.Health(ctx) // Health closes the provider
}

// startContainer runs clickHouseImage, waits until its native port answers a
// Ping, and returns the address and a function that terminates it.
func startContainer(ctx context.Context) (addr string, stop func() error, err error) {
	ctx, cancel := context.WithTimeout(ctx, containerStartTimeout)
	defer cancel()
	ctr, err := testcontainers.Run(ctx, clickHouseImage,
		testcontainers.WithExposedPorts("9000/tcp"),
		testcontainers.WithEnv(map[string]string{
			"CLICKHOUSE_USER":     containerUser,
			"CLICKHOUSE_PASSWORD": containerPassword,
		}),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("9000/tcp")),
	)
	stop = func() error {
		if ctr == nil {
			return nil
		}
		return testcontainers.TerminateContainer(ctr)
	}
	if err != nil {
		_ = stop()
		return "", nil, fmt.Errorf("testcontainers %s: %w", clickHouseImage, err)
	}
	addr, err = ctr.PortEndpoint(ctx, "9000/tcp", "")
	if err != nil {
		_ = stop()
		return "", nil, fmt.Errorf("testcontainers %s: native port: %w", clickHouseImage, err)
	}
	return addr, stop, nil
}
