package schemas

import (
	"hash/fnv"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// Key identifies the unit fusebox keeps statistics for: one tenant's calls to
// one model from one service in one deployment variant. It is
// fuseschema.Key (a fuse command's target is a Key); see there for String,
// ParseKey and Matches.
type Key = fuseschema.Key

// The key dimensions, as configuration files name them.
const (
	DimTenant  = fuseschema.DimTenant
	DimService = fuseschema.DimService
	DimModel   = fuseschema.DimModel
	DimVariant = fuseschema.DimVariant
)

// Dimensions lists the key dimensions in key order (fuseschema's slice).
var Dimensions = fuseschema.Dimensions

// Wildcard is the value of a Target dimension that matches every value.
const Wildcard = fuseschema.Wildcard

// ParseKey parses the form written by Key.String.
func ParseKey(s string) (Key, error) { return fuseschema.ParseKey(s) }

// TenantHash is the FNV-1a 32-bit hash of the tenant, used to choose the
// partition of the keyed topic: every record of one tenant (spans and the
// corrections that join to them) lands in one partition, so one worker owns
// all of that tenant's state.
func TenantHash(tenant string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return h.Sum32()
}
