package clickhousesink

import (
	"testing"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

func TestMain(m *testing.M) { testharness.Main(m) }
