package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

// ClickHouseConfig maps the sinks.clickhouse section onto the sink's
// configuration.
func ClickHouseConfig(ch config.ClickHouse) (clickhousesink.Config, error) {
	c := clickhousesink.DefaultConfig()
	c.Addrs = ch.Addr
	c.Database = ch.Database
	c.Username = ch.Username
	c.Password = ch.Password
	if ch.PasswordEnv != "" {
		v, ok := os.LookupEnv(ch.PasswordEnv)
		if !ok {
			return c, fmt.Errorf("sinks.clickhouse.password_env: environment variable %s is not set", ch.PasswordEnv)
		}
		c.Password = v
	}
	if ch.TLS.Enabled {
		tc, err := TLSConfig(ch.TLS, "sinks.clickhouse.tls")
		if err != nil {
			return c, err
		}
		c.TLS = tc
	}
	c.BatchSize = ch.BatchRows
	c.FlushInterval = ch.FlushEvery
	c.BufferCap = ch.BufferRows
	c.DialTimeout = ch.DialTimeout
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("sinks.clickhouse: %w", err)
	}
	return c, nil
}

// migrate creates the database if missing and applies the migrations.
func migrate(ctx context.Context, c clickhousesink.Config, log *slog.Logger) error {
	conn, err := clickhousesink.Open(c, "default")
	if err != nil {
		return fmt.Errorf("sinks.clickhouse: %w", err)
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+c.Database); err != nil {
		return fmt.Errorf("sinks.clickhouse: create database %s: %w", c.Database, err)
	}
	res, err := clickhousesink.Migrate(ctx, conn, c.Database)
	if err != nil {
		return fmt.Errorf("sinks.clickhouse: migrate: %w", err)
	}
	for _, r := range res {
		log.Info("clickhouse migration", "version", r.Version, "name", r.Name, "outcome", r.Outcome)
	}
	return nil
}
