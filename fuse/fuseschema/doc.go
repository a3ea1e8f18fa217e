// Package fuseschema is the fuse command of fusebox: FuseCommand, its
// target Key, and its canonical JSON form (fusebox.fuse_command.v1, see
// codec.go and fuse_command.v1.schema.json), the bytes fusebox writes to
// the fuse topic and signs, with a strict decoder (DecodeFuseCommand) and
// the ordering of a target's commands (CompareFuseOrder).
//
// It imports only the standard library and its sub-package jsonw (the
// encoding/json number and string writers, shared with schemas). Package
// fuse (signing, verifying, the gateway client) builds on it; the fusebox
// module's package schemas re-exports its types and values
// (schemas.FuseCommand is fuseschema.FuseCommand), so both modules speak
// one type.
//
// Errors wrap ErrMalformed, ErrInvalid or ErrTooLarge and carry a
// FieldError naming the member (built by Wrap, InvalidField,
// MalformedField and FieldTooLarge); the fusebox module's schemas builds
// the errors of its other records with these same values and functions.
package fuseschema
