package kafkago_test

import (
	"testing"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
	"github.com/fusebox-dev/fusebox/fuse/kafkago"
)

func source(brokers []string, topic string) fuse.Source {
	return kafkago.NewSource(brokers, topic, nil)
}

// The kafka-go source passes the same gateway scenarios as the default one.
func TestGatewayKafkaGo(t *testing.T)     { fusetest.RunCore(t, source) }
func TestKeyRotationKafkaGo(t *testing.T) { fusetest.RunRotation(t, source) }
