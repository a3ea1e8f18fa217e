// Package jsonw appends JSON numbers and strings to a byte slice exactly as
// encoding/json writes them, without reflection or allocation.
//
// It holds the one copy of these writers for the fuse command's canonical
// form (package fuseschema) and for the fusebox module's own encoders
// (package schemas: the verdict sink, the OTLP JSON and correction
// encoders), which import it from here so that the fuse module still needs
// only the standard library. It is not meant as an API for gateways: its
// names may change with the two packages that use it.
package jsonw
